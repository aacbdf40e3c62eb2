-- Work items: one per async HTTP step, from its first call until its
-- outcome. The endpoint completes it through /webhook/{flow}/{step}/{token};
-- token_hash is the SHA-256 of that receipt token. A completion is taken
-- only from WorkActive or WorkNotCompleted, in the transaction that records
-- it and resumes the pause named by wait_key; a finished item never
-- changes again. dispatch counts calls of the endpoint.
CREATE TABLE work_items (
    id            text PRIMARY KEY,
    run_id        text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    workflow_id   text NOT NULL,
    step_name     text NOT NULL,
    execution_key text NOT NULL,
    token_hash    BLOB NOT NULL UNIQUE,
    state         text NOT NULL CHECK (state IN ('WorkActive','WorkNotCompleted','WorkSucceeded','WorkFailed')),
    dispatch      integer NOT NULL DEFAULT 1,
    wait_key      text NOT NULL,
    result        TEXT,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    UNIQUE (run_id, execution_key)
);
