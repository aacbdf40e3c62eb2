-- Runs: one execution of one workflow version.
CREATE TABLE runs (
    id               text PRIMARY KEY,
    workflow_id      text NOT NULL,
    workflow_version text NOT NULL,
    status           text NOT NULL CHECK (status IN ('pending','running','suspended','succeeded','failed','cancelled')),
    input            TEXT NOT NULL,
    output           TEXT,
    error            TEXT,
    idempotency_key  text,
    -- next_seq is the number the run's next event gets; events are numbered
    -- 1, 2, 3… without gaps because every append updates this row.
    next_seq         bigint NOT NULL DEFAULT 1,
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX runs_idempotency_key ON runs (workflow_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX runs_created ON runs (created_at DESC, id DESC);
CREATE INDEX runs_status_created ON runs (status, created_at DESC, id DESC);
CREATE INDEX runs_workflow_created ON runs (workflow_id, created_at DESC, id DESC);

-- Events: each run's append-only log.
CREATE TABLE events (
    run_id     text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    type       text NOT NULL,
    step       text NOT NULL DEFAULT '',
    payload    TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- Suspensions: why a run is paused and how it resumes. One row per
-- (run, step key). checkpoint is immutable once set; resume_data, resumed_at
-- and resumed_by are written once (see the trigger below). A row with
-- precompleted = true is a resume that arrived before its pause committed.
CREATE TABLE suspensions (
    id                 text PRIMARY KEY,
    run_id             text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    workflow_id        text NOT NULL,
    workflow_version   text NOT NULL,
    step_name          text NOT NULL DEFAULT '',
    step_key           text NOT NULL,
    kind               text NOT NULL DEFAULT '',
    reason             text NOT NULL DEFAULT '',
    status             text NOT NULL CHECK (status IN ('pending','resumed','expired','cancelled')),
    checkpoint         TEXT,
    resume_step        text NOT NULL DEFAULT '',
    resume_schema      TEXT,
    resume_data        TEXT,
    resume_request_key text,
    decision           text,
    assignee           text NOT NULL DEFAULT '',
    deferred           TEXT,
    wake_at            TIMESTAMP,
    -- Reserved for deadlines and any-of/all-of groups.
    deadline_at        TIMESTAMP,
    group_id           text,
    precompleted       BOOLEAN NOT NULL DEFAULT false,
    suspended_at       TIMESTAMP,
    resumed_at         TIMESTAMP,
    resumed_by         text,
    created_at         TIMESTAMP NOT NULL,
    UNIQUE (run_id, step_key)
);
CREATE INDEX suspensions_by_status ON suspensions (status, suspended_at, id) WHERE NOT precompleted;
CREATE INDEX suspensions_by_reason ON suspensions (reason, status, suspended_at, id) WHERE NOT precompleted;
CREATE INDEX suspensions_by_run ON suspensions (run_id);

CREATE TRIGGER suspensions_checkpoint_immutable BEFORE UPDATE OF checkpoint ON suspensions
    WHEN OLD.checkpoint IS NOT NULL AND NEW.checkpoint IS NOT OLD.checkpoint
BEGIN
    SELECT RAISE(ABORT, 'suspension checkpoint is immutable');
END;
CREATE TRIGGER suspensions_resume_write_once BEFORE UPDATE OF resume_data, resumed_at, resumed_by ON suspensions
    WHEN OLD.resumed_at IS NOT NULL AND (NEW.resume_data IS NOT OLD.resume_data
        OR NEW.resumed_at IS NOT OLD.resumed_at OR NEW.resumed_by IS NOT OLD.resumed_by)
BEGIN
    SELECT RAISE(ABORT, 'suspension resume data is written once');
END;

-- Jobs: the durable queue. A job is deleted when its outcome commits, in the
-- same transaction. key is unique among queued jobs (resume-{run}-{step}…).
-- Workers claim with in one write transaction (SQLite has a single writer) and hold a lease; a commit is
-- fenced on (id, attempt).
CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    key           text NOT NULL UNIQUE,
    kind          text NOT NULL,
    run_id        text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step          text NOT NULL DEFAULT '',
    input         TEXT,
    suspension_id text,
    status        text NOT NULL DEFAULT 'available' CHECK (status IN ('available','running')),
    run_at        TIMESTAMP NOT NULL,
    attempt       integer NOT NULL DEFAULT 0,
    locked_by     text,
    lease_until   TIMESTAMP,
    created_at    TIMESTAMP NOT NULL
);
CREATE INDEX jobs_due ON jobs (run_at, id) WHERE status = 'available';
CREATE INDEX jobs_lease ON jobs (lease_until) WHERE status = 'running';
CREATE INDEX jobs_run ON jobs (run_id);

-- Users and API keys. Only a SHA-256 of an API key is stored.
CREATE TABLE users (
    id            text PRIMARY KEY,
    email         text NOT NULL UNIQUE,
    name          text NOT NULL DEFAULT '',
    role          text NOT NULL CHECK (role IN ('admin','reviewer','founder')),
    password_hash text NOT NULL DEFAULT '',
    disabled      BOOLEAN NOT NULL DEFAULT false,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL
);

CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    name         text NOT NULL,
    prefix       text NOT NULL,
    hash         BLOB NOT NULL UNIQUE,
    user_id      text NOT NULL REFERENCES users (id),
    created_at   TIMESTAMP NOT NULL,
    last_used_at TIMESTAMP,
    revoked_at   TIMESTAMP
);
