DROP INDEX signals_kept;
CREATE INDEX signals_kept ON signals (run_id, name, id) WHERE step_key IS NULL;
