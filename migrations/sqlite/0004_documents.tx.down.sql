DROP TABLE documents;
ALTER TABLE suspensions DROP COLUMN accept;
