-- Runs: one execution of one workflow version.
CREATE TABLE runs (
    id               text PRIMARY KEY,
    workflow_id      text NOT NULL,
    workflow_version text NOT NULL,
    status           text NOT NULL CHECK (status IN ('pending','running','suspended','succeeded','failed','cancelled')),
    input            jsonb NOT NULL,
    output           jsonb,
    error            jsonb,
    idempotency_key  text,
    -- next_seq is the number the run's next event gets; events are numbered
    -- 1, 2, 3… without gaps because every append updates this row.
    next_seq         bigint NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
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
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL,
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
    checkpoint         jsonb,
    resume_step        text NOT NULL DEFAULT '',
    resume_schema      jsonb,
    resume_data        jsonb,
    resume_request_key text,
    decision           text,
    assignee           text NOT NULL DEFAULT '',
    deferred           jsonb,
    wake_at            timestamptz,
    -- Reserved for deadlines and any-of/all-of groups.
    deadline_at        timestamptz,
    group_id           text,
    precompleted       boolean NOT NULL DEFAULT false,
    suspended_at       timestamptz,
    resumed_at         timestamptz,
    resumed_by         text,
    created_at         timestamptz NOT NULL,
    UNIQUE (run_id, step_key)
);
CREATE INDEX suspensions_by_status ON suspensions (status, suspended_at, id) WHERE NOT precompleted;
CREATE INDEX suspensions_by_reason ON suspensions (reason, status, suspended_at, id) WHERE NOT precompleted;
CREATE INDEX suspensions_by_run ON suspensions (run_id);

CREATE FUNCTION suspensions_write_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.checkpoint IS NOT NULL AND NEW.checkpoint IS DISTINCT FROM OLD.checkpoint THEN
        RAISE EXCEPTION 'suspension % checkpoint is immutable', OLD.id USING ERRCODE = 'check_violation';
    END IF;
    IF OLD.resumed_at IS NOT NULL AND (NEW.resume_data IS DISTINCT FROM OLD.resume_data
        OR NEW.resumed_at IS DISTINCT FROM OLD.resumed_at OR NEW.resumed_by IS DISTINCT FROM OLD.resumed_by) THEN
        RAISE EXCEPTION 'suspension % resume data is written once', OLD.id USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER suspensions_write_once BEFORE UPDATE ON suspensions
    FOR EACH ROW EXECUTE FUNCTION suspensions_write_once();

-- Jobs: the durable queue. A job is deleted when its outcome commits, in the
-- same transaction. key is unique among queued jobs (resume-{run}-{step}…).
-- Workers claim with FOR UPDATE SKIP LOCKED and hold a lease; a commit is
-- fenced on (id, attempt).
CREATE TABLE jobs (
    id            bigserial PRIMARY KEY,
    key           text NOT NULL UNIQUE,
    kind          text NOT NULL,
    run_id        text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step          text NOT NULL DEFAULT '',
    input         jsonb,
    suspension_id text,
    status        text NOT NULL DEFAULT 'available' CHECK (status IN ('available','running')),
    run_at        timestamptz NOT NULL,
    attempt       integer NOT NULL DEFAULT 0,
    locked_by     text,
    lease_until   timestamptz,
    created_at    timestamptz NOT NULL
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
    disabled      boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);

CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    name         text NOT NULL,
    prefix       text NOT NULL,
    hash         bytea NOT NULL UNIQUE,
    user_id      text NOT NULL REFERENCES users (id),
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
