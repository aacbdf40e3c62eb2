-- The up migration's runs that were pending stay running: a run whose first
-- step is queued is running in either version.
ALTER TABLE work_items DROP CONSTRAINT work_items_state_check;
UPDATE work_items SET state = CASE state WHEN 'active' THEN 'WorkActive' WHEN 'not_completed' THEN 'WorkNotCompleted'
                                         WHEN 'succeeded' THEN 'WorkSucceeded' ELSE 'WorkFailed' END;
ALTER TABLE work_items ADD CONSTRAINT work_items_state_check CHECK (state IN ('WorkActive','WorkNotCompleted','WorkSucceeded','WorkFailed'));
