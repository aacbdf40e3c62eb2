-- One-time password-reset links. The link carries 128 random bits; only
-- their SHA-256 is stored, so a copy of the database resets nothing. A
-- link works once (used_at is set by a conditional update) and until
-- expires_at; issuing a new one for a user deletes their unused ones.
CREATE TABLE password_resets (
    id_hash    bytea PRIMARY KEY,
    user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- The admin who issued the link, or '' when the person asked for it
    -- by mail.
    created_by text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX password_resets_user ON password_resets (user_id);
