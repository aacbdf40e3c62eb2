-- Work item states take the API's casing, lower case like every other
-- state: active, not_completed, succeeded, failed. SQLite cannot change a
-- CHECK constraint in place, so the table is rebuilt.
CREATE TABLE work_items_new (
    id            text PRIMARY KEY,
    run_id        text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    workflow_id   text NOT NULL,
    step_name     text NOT NULL,
    execution_key text NOT NULL,
    token_hash    BLOB NOT NULL UNIQUE,
    state         text NOT NULL CHECK (state IN ('active','not_completed','succeeded','failed')),
    dispatch      integer NOT NULL DEFAULT 1,
    wait_key      text NOT NULL,
    result        TEXT,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    UNIQUE (run_id, execution_key)
);
INSERT INTO work_items_new
SELECT id, run_id, workflow_id, step_name, execution_key, token_hash,
       CASE state WHEN 'WorkActive' THEN 'active' WHEN 'WorkNotCompleted' THEN 'not_completed'
                  WHEN 'WorkSucceeded' THEN 'succeeded' ELSE 'failed' END,
       dispatch, wait_key, result, created_at, updated_at
FROM work_items;
DROP TABLE work_items;
ALTER TABLE work_items_new RENAME TO work_items;

-- A run is running from its start: its first step is queued or executing,
-- as after a resume. pending is no longer written.
UPDATE runs SET status = 'running' WHERE status = 'pending';
