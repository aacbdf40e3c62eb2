-- Who started a run, as they were then: a person's id, email and role, or
-- '' for runs the system starts (webhook triggers, seeds). NOT NULL, so
-- that the idempotency index below holds system runs to one scope: with
-- NULLs, no two system starts would ever collide.
ALTER TABLE runs ADD COLUMN started_by text NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN started_by_email text NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN started_by_role text NOT NULL DEFAULT '';

-- An idempotency key belongs to its caller: the same key from another
-- person starts another run instead of handing back theirs.
DROP INDEX runs_idempotency_key;
CREATE UNIQUE INDEX runs_idempotency_key ON runs (workflow_id, started_by, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- A suspension keeps who started its run, so that a decision is refused
-- to a founder in their own run without reading the run.
ALTER TABLE suspensions ADD COLUMN run_started_by text NOT NULL DEFAULT '';
