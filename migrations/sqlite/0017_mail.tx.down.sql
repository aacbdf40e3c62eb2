DROP TABLE mail_deliveries;
DROP TABLE mail_outbox;
ALTER TABLE users DROP COLUMN mail_preference;
