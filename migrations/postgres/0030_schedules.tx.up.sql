-- Schedules: runs started by the calendar. A schedule is a row: its next
-- fire (next_fire_at) and when a server should look at it next (due_at:
-- the next fire, or sooner while a buffered fire waits for the last run
-- to end; NULL while paused) live with it. A server claims a due schedule
-- for a lease (attempt, locked_by, lease_until) and commits its fires,
-- their runs and its next fire in one transaction fenced on the claim;
-- every change of the rule bumps attempt, so a claim made under the old
-- rule commits nothing. source is 'api', or 'workflow' for schedules a
-- workflow document carries.
CREATE TABLE schedules (
    id           text PRIMARY KEY,
    workflow_id  text NOT NULL,
    cron         text NOT NULL DEFAULT '',
    every_ms     bigint NOT NULL DEFAULT 0,
    timezone     text NOT NULL,
    input        jsonb,
    overlap      text NOT NULL CHECK (overlap IN ('skip', 'buffer_one', 'allow')),
    catch_up_ms  bigint NOT NULL,
    paused       boolean NOT NULL DEFAULT false,
    note         text NOT NULL DEFAULT '',
    source       text NOT NULL DEFAULT 'api',
    revision     integer NOT NULL DEFAULT 1,
    next_fire_at timestamptz,
    due_at       timestamptz,
    buffered_at  timestamptz,
    attempt      integer NOT NULL DEFAULT 0,
    locked_by    text,
    lease_until  timestamptz,
    last_run_id  text,
    last_fire_at timestamptz,
    last_outcome text NOT NULL DEFAULT '',
    created_by   text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
-- Room on each page, so that a claim (which changes no indexed column)
-- updates its row in place.
ALTER TABLE schedules SET (fillfactor = 70);
CREATE INDEX schedules_due ON schedules (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX schedules_workflow ON schedules (workflow_id);

-- What became of each fire time: one row a fire (primary key: a fire time
-- is recorded once), a span of missed fires one row (count, until). A
-- buffered fire's row becomes started when its run starts.
CREATE TABLE schedule_fires (
    schedule_id  text NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    fire_at      timestamptz NOT NULL,
    outcome      text NOT NULL CHECK (outcome IN ('started', 'skipped', 'buffered', 'missed', 'failed')),
    run_id       text,
    count        integer NOT NULL DEFAULT 1,
    until        timestamptz,
    manual       boolean NOT NULL DEFAULT false,
    requested_by text NOT NULL DEFAULT '',
    message      text NOT NULL DEFAULT '',
    recorded_at  timestamptz NOT NULL,
    PRIMARY KEY (schedule_id, fire_at)
);
-- Housekeeping deletes records older than the runs' retention.
CREATE INDEX schedule_fires_recorded ON schedule_fires (recorded_at);
