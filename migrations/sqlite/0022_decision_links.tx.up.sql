-- Decision links: one person without an account decides one request by a
-- link made for their email. The link carries 256 random bits; only their
-- SHA-256 is stored, so a copy of the database decides nothing. A link
-- works once (used_at is set by a conditional update in the decision's
-- own transaction), until expires_at, and until revoked.
CREATE TABLE decision_links (
    id            text PRIMARY KEY,
    suspension_id text NOT NULL REFERENCES suspensions (id) ON DELETE CASCADE,
    email         text NOT NULL,
    token_hash    BLOB NOT NULL UNIQUE,
    created_by    text NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    expires_at    TIMESTAMP NOT NULL,
    used_at       TIMESTAMP,
    revoked_at    TIMESTAMP,
    revoked_by    text NOT NULL DEFAULT ''
);
CREATE INDEX decision_links_suspension ON decision_links (suspension_id, created_at);
