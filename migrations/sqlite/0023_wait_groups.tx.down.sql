DROP INDEX suspensions_group;
ALTER TABLE suspensions DROP COLUMN branch;
ALTER TABLE suspensions DROP COLUMN group_mode;
