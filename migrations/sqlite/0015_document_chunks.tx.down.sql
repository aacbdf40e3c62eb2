DROP INDEX documents_staged;
DELETE FROM documents WHERE completed_at IS NULL;
ALTER TABLE documents DROP COLUMN completed_at;
ALTER TABLE documents ADD COLUMN data BLOB NOT NULL DEFAULT x'';
UPDATE documents SET data = COALESCE(CAST((
    SELECT group_concat(o.data, '') FROM (SELECT data FROM document_chunks WHERE document_id = documents.id ORDER BY seq) o
) AS BLOB), x'');
DROP TABLE document_chunks;
