DROP INDEX documents_staged;
DELETE FROM documents WHERE completed_at IS NULL;
ALTER TABLE documents DROP COLUMN completed_at;
ALTER TABLE documents ADD COLUMN data bytea NOT NULL DEFAULT '';
UPDATE documents d SET data = (SELECT string_agg(c.data, '' ORDER BY c.seq) FROM document_chunks c WHERE c.document_id = d.id)
WHERE EXISTS (SELECT 1 FROM document_chunks c WHERE c.document_id = d.id);
ALTER TABLE documents ALTER COLUMN data DROP DEFAULT;
DROP TABLE document_chunks;
