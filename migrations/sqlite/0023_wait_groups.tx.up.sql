-- Waits on several things: each branch of a group is a suspension of its
-- own, with its group's key within the run (group_id, reserved since the
-- first schema), the group's mode (any or all) and its branch name. The
-- group resolves under the run's lock, when a branch completes.
ALTER TABLE suspensions ADD COLUMN group_mode text;
ALTER TABLE suspensions ADD COLUMN branch text;
CREATE INDEX suspensions_group ON suspensions (run_id, group_id) WHERE group_id IS NOT NULL;
