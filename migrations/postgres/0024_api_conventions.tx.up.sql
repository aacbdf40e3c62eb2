-- Work item states take the API's casing, lower case like every other
-- state: active, not_completed, succeeded, failed.
ALTER TABLE work_items DROP CONSTRAINT work_items_state_check;
UPDATE work_items SET state = CASE state WHEN 'WorkActive' THEN 'active' WHEN 'WorkNotCompleted' THEN 'not_completed'
                                         WHEN 'WorkSucceeded' THEN 'succeeded' ELSE 'failed' END;
ALTER TABLE work_items ADD CONSTRAINT work_items_state_check CHECK (state IN ('active','not_completed','succeeded','failed'));

-- A run is running from its start: its first step is queued or executing,
-- as after a resume. pending is no longer written.
UPDATE runs SET status = 'running' WHERE status = 'pending';
