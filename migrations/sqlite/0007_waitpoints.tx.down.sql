DROP TABLE waitpoints;
ALTER TABLE suspensions DROP COLUMN instructions;
ALTER TABLE suspensions DROP COLUMN title;
