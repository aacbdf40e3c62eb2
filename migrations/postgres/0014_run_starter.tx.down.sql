-- Fails while two people's runs share a workflow and an idempotency key,
-- which the old index forbade: delete one of them first.
ALTER TABLE suspensions DROP COLUMN run_started_by;
DROP INDEX runs_idempotency_key;
CREATE UNIQUE INDEX runs_idempotency_key ON runs (workflow_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
ALTER TABLE runs DROP COLUMN started_by_role;
ALTER TABLE runs DROP COLUMN started_by_email;
ALTER TABLE runs DROP COLUMN started_by;
