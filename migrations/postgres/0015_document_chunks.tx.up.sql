-- A document's content lives in chunks of at most 1 MiB, written as the
-- upload is read and read back one at a time as it is served, so that no
-- server holds a whole file in memory. Chunks go with their document.
CREATE TABLE document_chunks (
    document_id text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    seq         integer NOT NULL,
    data        bytea NOT NULL,
    PRIMARY KEY (document_id, seq)
);
INSERT INTO document_chunks (document_id, seq, data)
SELECT d.id, g.seq, substring(d.data FROM g.seq * 1048576 + 1 FOR 1048576)
FROM documents d, generate_series(0, (length(d.data) - 1) / 1048576) AS g (seq)
WHERE length(d.data) > 0;
ALTER TABLE documents DROP COLUMN data;

-- A document is staged (completed_at NULL) while its upload is written:
-- it is neither listed nor served, and names nothing a resume may use.
-- The resume that uses it completes it in its own transaction; staged
-- documents left by an upload that never finished (a crash, a lost
-- connection) are swept by housekeeping.
ALTER TABLE documents ADD COLUMN completed_at timestamptz;
UPDATE documents SET completed_at = created_at;
CREATE INDEX documents_staged ON documents (created_at) WHERE completed_at IS NULL;
