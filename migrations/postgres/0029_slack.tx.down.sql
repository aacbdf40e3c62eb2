DROP TABLE slack_messages;
ALTER TABLE suspensions DROP COLUMN slack;
