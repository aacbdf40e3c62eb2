-- A wait takes the oldest signal kept for it, in (created_at, id) order:
-- the index of kept signals follows that order, so that the lookup reads
-- one entry instead of sorting every kept signal of the name.
DROP INDEX signals_kept;
CREATE INDEX signals_kept ON signals (run_id, name, created_at, id) WHERE step_key IS NULL;
