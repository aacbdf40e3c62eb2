-- Requests posted to Slack. A suspension names where (slack: a channel,
-- 'dm', or '' for nowhere), from its step or its workflow.
ALTER TABLE suspensions ADD COLUMN slack text NOT NULL DEFAULT '';

-- One Slack message about one request: in a channel (target is the
-- channel) or to one person (dm, target is their email). The mail
-- dispatcher's fan-out makes the rows in the transaction that takes the
-- request's outbox intent, so that a request is posted once. A claimed row
-- is 'posting' until lease_until; a server that dies mid-post leaves it
-- to be claimed again, and the next attempt first looks for the message
-- the last one may have posted. A posted message is updated in place
-- whenever its request's status or votes differ from what it last showed
-- (shown_status, shown_votes), until it shows the request's end.
CREATE TABLE slack_messages (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    suspension_id text NOT NULL REFERENCES suspensions (id) ON DELETE CASCADE,
    target        text NOT NULL,
    dm            boolean NOT NULL DEFAULT false,
    status        text NOT NULL CHECK (status IN ('queued', 'posting', 'posted', 'failed')),
    attempt       integer NOT NULL DEFAULT 0,
    run_at        timestamp NOT NULL,
    give_up_at    timestamp NOT NULL,
    locked_by     text,
    lease_until   timestamp,
    channel_id    text NOT NULL DEFAULT '',
    ts            text NOT NULL DEFAULT '',
    shown_status  text NOT NULL DEFAULT '',
    shown_votes   integer NOT NULL DEFAULT 0,
    last_error    text NOT NULL DEFAULT '',
    created_at    timestamp NOT NULL,
    posted_at     timestamp
);
CREATE UNIQUE INDEX slack_once ON slack_messages (suspension_id, target);
CREATE INDEX slack_due ON slack_messages (run_at, id) WHERE status = 'queued';
CREATE INDEX slack_leased ON slack_messages (lease_until) WHERE status = 'posting';
CREATE INDEX slack_live ON slack_messages (id) WHERE status = 'posted' AND shown_status = 'pending';
