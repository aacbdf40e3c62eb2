-- Signals: named deliveries to a run, each under the sender's signal id
-- (unique per run, so a repeat is recognised). A signal resolves the wait
-- it names or the run's pending wait of the same name; with no such wait
-- it is kept here (step_key NULL) until the first wait of its name is
-- reached, which takes the oldest kept one.
CREATE TABLE signals (
    id           text PRIMARY KEY,
    run_id       text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name         text NOT NULL,
    signal_id    text NOT NULL,
    payload      TEXT,
    sent_by      text NOT NULL DEFAULT '',
    created_at   TIMESTAMP NOT NULL,
    -- The wait it resolved, once it has.
    step_key     text,
    delivered_at TIMESTAMP,
    UNIQUE (run_id, signal_id)
);
CREATE INDEX signals_kept ON signals (run_id, name, id) WHERE step_key IS NULL;
