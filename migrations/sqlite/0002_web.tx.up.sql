-- Browser sessions, kept server-side. The cookie carries a random id; only
-- its SHA-256 is stored. Logging out, changing a password and disabling a
-- user delete rows here, which ends those sessions at once.
CREATE TABLE web_sessions (
    id_hash    BLOB PRIMARY KEY,
    user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    data       text NOT NULL DEFAULT '{}',
    created_at TIMESTAMP NOT NULL,
    seen_at    TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions (user_id);
CREATE INDEX web_sessions_expires ON web_sessions (expires_at);

-- The audit log: who did what to which subject, when. Append-only: the
-- database refuses to change or remove a row.
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TIMESTAMP NOT NULL,
    actor_id    text NOT NULL DEFAULT '',
    actor_email text NOT NULL DEFAULT '',
    action      text NOT NULL,
    subject     text NOT NULL DEFAULT '',
    workflow_id text NOT NULL DEFAULT '',
    data        text NOT NULL DEFAULT '{}',
    address     text NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_at ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_actor ON audit_log (actor_email, at DESC, id DESC);
CREATE INDEX audit_log_action ON audit_log (action, at DESC, id DESC);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;
