DROP INDEX suspensions_decided;
DROP INDEX suspensions_pending;
DROP INDEX suspensions_pending_by_reason;
CREATE INDEX suspensions_by_status ON suspensions (status, suspended_at, id) WHERE NOT precompleted;
CREATE INDEX suspensions_by_reason ON suspensions (reason, status, suspended_at, id) WHERE NOT precompleted;
