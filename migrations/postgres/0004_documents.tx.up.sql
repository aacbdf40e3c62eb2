-- Document types a suspension accepts as uploads (MIME types, a JSON array).
ALTER TABLE suspensions ADD COLUMN accept json NOT NULL DEFAULT '[]';

-- Uploaded documents live in the database, so every server sharing it can
-- serve them. The content type is the one sniffed from the bytes, never
-- the one the browser claimed.
CREATE TABLE documents (
    id             text PRIMARY KEY,
    suspension_id  text NOT NULL REFERENCES suspensions (id),
    run_id         text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    uploader_id    text NOT NULL,
    uploader_email text NOT NULL,
    filename       text NOT NULL,
    content_type   text NOT NULL,
    size           bigint NOT NULL,
    sha256         bytea NOT NULL,
    data           bytea NOT NULL,
    created_at     timestamptz NOT NULL
);
CREATE INDEX documents_suspension ON documents (suspension_id, created_at);
CREATE INDEX documents_run ON documents (run_id);
