DELETE FROM mail_deliveries WHERE round > 0;
DROP INDEX mail_once_per_request;
CREATE UNIQUE INDEX mail_once_per_request ON mail_deliveries (suspension_id, user_id);
ALTER TABLE mail_deliveries DROP COLUMN round;
CREATE TABLE mail_outbox_once (
    suspension_id text PRIMARY KEY REFERENCES suspensions (id) ON DELETE CASCADE,
    created_at    TIMESTAMP NOT NULL
);
INSERT INTO mail_outbox_once (suspension_id, created_at) SELECT suspension_id, min(created_at) FROM mail_outbox GROUP BY suspension_id;
DROP TABLE mail_outbox;
ALTER TABLE mail_outbox_once RENAME TO mail_outbox;
ALTER TABLE suspensions DROP COLUMN escalated;
