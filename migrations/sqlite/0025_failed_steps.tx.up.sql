-- A failed run's failed step: the job whose step failed it, kept by the
-- failing commit (in its transaction) so that a retry can queue the same
-- job again, with the same input. One per run; a retry takes it.
CREATE TABLE failed_steps (
    run_id        text PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    job_key       text NOT NULL,
    kind          text NOT NULL,
    step          text NOT NULL DEFAULT '',
    input         TEXT,
    suspension_id text,
    failed_at     TIMESTAMP NOT NULL
);
