ALTER TABLE suspensions DROP COLUMN reason_label;
ALTER TABLE suspensions DROP COLUMN fields;
