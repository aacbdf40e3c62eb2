DELETE FROM mail_deliveries WHERE round > 0;
DROP INDEX mail_once_per_request;
CREATE UNIQUE INDEX mail_once_per_request ON mail_deliveries (suspension_id, user_id);
ALTER TABLE mail_deliveries DROP COLUMN round;
DELETE FROM mail_outbox WHERE round > 0;
ALTER TABLE mail_outbox DROP CONSTRAINT mail_outbox_pkey;
ALTER TABLE mail_outbox ADD PRIMARY KEY (suspension_id);
ALTER TABLE mail_outbox DROP COLUMN round;
ALTER TABLE suspensions DROP COLUMN escalated;
