-- The rungs of a request's deadline ladder that have fired: a rung fires
-- only as the next one, and once (see domain.DecideEscalation).
ALTER TABLE suspensions ADD COLUMN escalated integer NOT NULL DEFAULT 0;

-- A reminder is a request's mail again. Round 0 is the request's first
-- mail (and the mail of people a rung adds); round n is the reminder of
-- the ladder's rung n-1. A person gets at most one mail a round.
ALTER TABLE mail_outbox ADD COLUMN round integer NOT NULL DEFAULT 0;
ALTER TABLE mail_outbox DROP CONSTRAINT mail_outbox_pkey;
ALTER TABLE mail_outbox ADD PRIMARY KEY (suspension_id, round);
ALTER TABLE mail_deliveries ADD COLUMN round integer NOT NULL DEFAULT 0;
DROP INDEX mail_once_per_request;
CREATE UNIQUE INDEX mail_once_per_request ON mail_deliveries (suspension_id, user_id, round);
