-- What a person is asked to do at a suspension, shown by the web app.
ALTER TABLE suspensions ADD COLUMN title text NOT NULL DEFAULT '';
ALTER TABLE suspensions ADD COLUMN instructions text NOT NULL DEFAULT '';

-- Waitpoints: a step's registered wait on a timer (DELAY) or on any HTTP
-- call to its resume URL (WEBHOOK). The row is written before the step's
-- pause commits, so a call that arrives first can be checked against it;
-- the pause itself is the suspension whose step_key is the waitpoint's id,
-- and its status is the waitpoint's (no suspension or pending: PENDING;
-- resumed: COMPLETED). One waitpoint per step execution: creating it again
-- (a retried attempt) returns the same one.
CREATE TABLE waitpoints (
    id               text PRIMARY KEY,
    run_id           text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_name        text NOT NULL,
    execution_key    text NOT NULL,
    type             text NOT NULL CHECK (type IN ('DELAY','WEBHOOK')),
    -- SHA-256 of the resume URL's token; the token itself is never stored.
    token_hash       BLOB,
    resume_at        TIMESTAMP,
    response_to_send TEXT,
    created_at       TIMESTAMP NOT NULL,
    UNIQUE (run_id, execution_key)
);
CREATE INDEX waitpoints_by_run ON waitpoints (run_id, created_at);
