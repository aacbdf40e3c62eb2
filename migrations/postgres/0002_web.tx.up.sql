-- Browser sessions, kept server-side. The cookie carries a random id; only
-- its SHA-256 is stored. Logging out, changing a password and disabling a
-- user delete rows here, which ends those sessions on every server at once.
CREATE TABLE web_sessions (
    id_hash    bytea PRIMARY KEY,
    user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    data       jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    seen_at    timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions (user_id);
CREATE INDEX web_sessions_expires ON web_sessions (expires_at);

-- The audit log: who did what to which subject, when. Append-only: the
-- database refuses to change or remove a row.
CREATE TABLE audit_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor_id    text NOT NULL DEFAULT '',
    actor_email text NOT NULL DEFAULT '',
    action      text NOT NULL,
    subject     text NOT NULL DEFAULT '',
    workflow_id text NOT NULL DEFAULT '',
    data        jsonb NOT NULL DEFAULT '{}',
    address     text NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_at ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_actor ON audit_log (actor_email, at DESC, id DESC);
CREATE INDEX audit_log_action ON audit_log (action, at DESC, id DESC);

CREATE FUNCTION audit_log_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only' USING ERRCODE = 'check_violation';
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
