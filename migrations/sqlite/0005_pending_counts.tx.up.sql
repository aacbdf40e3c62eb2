-- Pending suspensions counted by (workflow, reason, kind), so the inbox's
-- counts never scan the suspensions table. Triggers keep the counts in the
-- transaction that changes a suspension; SQLite has one writer, so they
-- update the counter rows directly. (PostgreSQL appends to
-- suspension_count_deltas instead, which stays empty here.)
CREATE TABLE suspension_counts (
    workflow_id text NOT NULL,
    reason      text NOT NULL,
    kind        text NOT NULL,
    n           integer NOT NULL,
    PRIMARY KEY (workflow_id, reason, kind)
);
CREATE TABLE suspension_count_deltas (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id text NOT NULL,
    reason      text NOT NULL,
    kind        text NOT NULL,
    delta       integer NOT NULL
);

-- A suspension is counted while it is pending and not a resume waiting for
-- its pause (precompleted).
CREATE TRIGGER suspension_counts_insert AFTER INSERT ON suspensions
    WHEN NEW.status = 'pending' AND NOT NEW.precompleted
BEGIN
    INSERT INTO suspension_counts (workflow_id, reason, kind, n) VALUES (NEW.workflow_id, NEW.reason, NEW.kind, 1)
    ON CONFLICT (workflow_id, reason, kind) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER suspension_counts_update AFTER UPDATE ON suspensions
    WHEN (OLD.status = 'pending' AND NOT OLD.precompleted) IS NOT (NEW.status = 'pending' AND NOT NEW.precompleted)
        OR (NEW.status = 'pending' AND NOT NEW.precompleted
            AND (NEW.workflow_id, NEW.reason, NEW.kind) IS NOT (OLD.workflow_id, OLD.reason, OLD.kind))
BEGIN
    UPDATE suspension_counts SET n = n - 1
    WHERE OLD.status = 'pending' AND NOT OLD.precompleted
        AND (workflow_id, reason, kind) = (OLD.workflow_id, OLD.reason, OLD.kind);
    INSERT INTO suspension_counts (workflow_id, reason, kind, n)
    SELECT NEW.workflow_id, NEW.reason, NEW.kind, 1 WHERE NEW.status = 'pending' AND NOT NEW.precompleted
    ON CONFLICT (workflow_id, reason, kind) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER suspension_counts_delete AFTER DELETE ON suspensions
    WHEN OLD.status = 'pending' AND NOT OLD.precompleted
BEGIN
    UPDATE suspension_counts SET n = n - 1 WHERE (workflow_id, reason, kind) = (OLD.workflow_id, OLD.reason, OLD.kind);
END;

INSERT INTO suspension_counts (workflow_id, reason, kind, n)
SELECT workflow_id, reason, kind, count(*) FROM suspensions
WHERE status = 'pending' AND NOT precompleted GROUP BY 1, 2, 3;

-- A founder's list reads only their own pending suspensions.
CREATE INDEX suspensions_by_assignee ON suspensions (lower(assignee), status, suspended_at, id)
    WHERE NOT precompleted AND assignee <> '';
