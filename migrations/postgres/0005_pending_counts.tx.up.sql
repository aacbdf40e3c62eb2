-- Pending suspensions counted by (workflow, reason, kind), so the inbox's
-- counts never scan the suspensions table. Triggers keep the counts in the
-- transaction that changes a suspension. To keep concurrent commits off a
-- few hot counter rows, they append to suspension_count_deltas instead, one
-- row per group a statement changed; the server folds deltas into
-- suspension_counts every few seconds. A count is its row plus its deltas.
CREATE TABLE suspension_counts (
    workflow_id text NOT NULL,
    reason      text NOT NULL,
    kind        text NOT NULL,
    n           bigint NOT NULL,
    PRIMARY KEY (workflow_id, reason, kind)
);
CREATE TABLE suspension_count_deltas (
    id          bigserial PRIMARY KEY,
    workflow_id text NOT NULL,
    reason      text NOT NULL,
    kind        text NOT NULL,
    delta       bigint NOT NULL
);

-- A suspension is counted while it is pending and not a resume waiting for
-- its pause (precompleted).
CREATE FUNCTION suspension_count_deltas() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO suspension_count_deltas (workflow_id, reason, kind, delta)
        SELECT workflow_id, reason, kind, count(*) FROM new_rows
        WHERE status = 'pending' AND NOT precompleted GROUP BY 1, 2, 3;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO suspension_count_deltas (workflow_id, reason, kind, delta)
        SELECT workflow_id, reason, kind, sum(d) FROM (
            SELECT workflow_id, reason, kind, -1 AS d FROM old_rows WHERE status = 'pending' AND NOT precompleted
            UNION ALL
            SELECT workflow_id, reason, kind, 1 FROM new_rows WHERE status = 'pending' AND NOT precompleted
        ) c GROUP BY 1, 2, 3 HAVING sum(d) <> 0;
    ELSE
        INSERT INTO suspension_count_deltas (workflow_id, reason, kind, delta)
        SELECT workflow_id, reason, kind, -count(*) FROM old_rows
        WHERE status = 'pending' AND NOT precompleted GROUP BY 1, 2, 3;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER suspension_counts_insert AFTER INSERT ON suspensions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION suspension_count_deltas();
CREATE TRIGGER suspension_counts_update AFTER UPDATE ON suspensions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION suspension_count_deltas();
CREATE TRIGGER suspension_counts_delete AFTER DELETE ON suspensions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION suspension_count_deltas();

INSERT INTO suspension_counts (workflow_id, reason, kind, n)
SELECT workflow_id, reason, kind, count(*) FROM suspensions
WHERE status = 'pending' AND NOT precompleted GROUP BY 1, 2, 3;

-- A founder's list reads only their own pending suspensions.
CREATE INDEX suspensions_by_assignee ON suspensions (lower(assignee), status, suspended_at, id)
    WHERE NOT precompleted AND assignee <> '';
