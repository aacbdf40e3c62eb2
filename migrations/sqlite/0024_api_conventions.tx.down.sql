-- The up migration's runs that were pending stay running: a run whose first
-- step is queued is running in either version.
CREATE TABLE work_items_old (
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
INSERT INTO work_items_old
SELECT id, run_id, workflow_id, step_name, execution_key, token_hash,
       CASE state WHEN 'active' THEN 'WorkActive' WHEN 'not_completed' THEN 'WorkNotCompleted'
                  WHEN 'succeeded' THEN 'WorkSucceeded' ELSE 'WorkFailed' END,
       dispatch, wait_key, result, created_at, updated_at
FROM work_items;
DROP TABLE work_items;
ALTER TABLE work_items_old RENAME TO work_items;
