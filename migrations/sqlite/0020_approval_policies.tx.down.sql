DROP TABLE votes;
ALTER TABLE suspensions DROP COLUMN requesters;
ALTER TABLE suspensions DROP COLUMN policy;
