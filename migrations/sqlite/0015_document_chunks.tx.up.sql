-- A document's content lives in chunks of at most 1 MiB, written as the
-- upload is read and read back one at a time as it is served, so that no
-- server holds a whole file in memory. Chunks go with their document.
CREATE TABLE document_chunks (
    document_id text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    data        BLOB NOT NULL,
    PRIMARY KEY (document_id, seq)
);
WITH RECURSIVE c (id, seq) AS (
    SELECT id, 0 FROM documents WHERE length(data) > 0
    UNION ALL
    SELECT c.id, c.seq + 1 FROM c JOIN documents d ON d.id = c.id WHERE (c.seq + 1) * 1048576 < length(d.data)
)
INSERT INTO document_chunks (document_id, seq, data)
SELECT c.id, c.seq, substr(d.data, c.seq * 1048576 + 1, 1048576) FROM c JOIN documents d ON d.id = c.id;
ALTER TABLE documents DROP COLUMN data;

-- A document is staged (completed_at NULL) while its upload is written:
-- it is neither listed nor served, and names nothing a resume may use.
-- The resume that uses it completes it in its own transaction; staged
-- documents left by an upload that never finished (a crash, a lost
-- connection) are swept by housekeeping.
ALTER TABLE documents ADD COLUMN completed_at TIMESTAMP;
UPDATE documents SET completed_at = created_at;
CREATE INDEX documents_staged ON documents (created_at) WHERE completed_at IS NULL;
