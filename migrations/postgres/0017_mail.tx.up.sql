-- Mail to the people who may act on a suspension.
--
-- Each person chooses how they hear of requests: '' (the default:
-- requests naming them at once, requests for their role in the daily
-- digest), 'immediately', 'digest' or 'off'.
ALTER TABLE users ADD COLUMN mail_preference text NOT NULL DEFAULT ''
    CHECK (mail_preference IN ('', 'immediately', 'digest', 'off'));

-- The intent to tell people of a new suspension, committed with it: one
-- row per suspension, so the commit stays one small insert. The mail
-- dispatcher turns it into deliveries, one per person, and deletes it.
CREATE TABLE mail_outbox (
    suspension_id text PRIMARY KEY REFERENCES suspensions (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL
);

-- One mail to one person: about a request (kind 'request'), the daily
-- digest of the requests held for it ('digest'), or a one-off message
-- ('message', its content in message). A request held for the digest
-- waits as status 'held' under its digest_day. A claimed row is
-- 'sending' until lease_until; a server that dies mid-send leaves it to
-- be claimed again after the lease.
CREATE TABLE mail_deliveries (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind          text NOT NULL CHECK (kind IN ('request', 'digest', 'message')),
    status        text NOT NULL CHECK (status IN ('queued', 'held', 'sending', 'sent', 'digested', 'skipped', 'failed')),
    suspension_id text REFERENCES suspensions (id) ON DELETE CASCADE,
    user_id       text REFERENCES users (id) ON DELETE CASCADE,
    recipient     text NOT NULL,
    digest_day    text,
    message       jsonb,
    attempt       integer NOT NULL DEFAULT 0,
    run_at        timestamptz NOT NULL,
    give_up_at    timestamptz NOT NULL,
    locked_by     text,
    lease_until   timestamptz,
    last_error    text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL,
    sent_at       timestamptz
);
-- A person gets at most one mail per request, and one digest a day.
CREATE UNIQUE INDEX mail_once_per_request ON mail_deliveries (suspension_id, user_id);
CREATE UNIQUE INDEX mail_digest_once_a_day ON mail_deliveries (user_id, digest_day) WHERE kind = 'digest';
CREATE INDEX mail_due ON mail_deliveries (run_at, id) WHERE status = 'queued';
CREATE INDEX mail_leased ON mail_deliveries (lease_until) WHERE status = 'sending';
CREATE INDEX mail_held ON mail_deliveries (user_id, digest_day) WHERE status = 'held';
