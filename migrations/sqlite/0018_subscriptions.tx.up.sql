-- Webhook subscriptions: an admin's URL and the event types it hears.
-- events is a JSON array of event types (["run.failed"]); the few rows
-- there are are matched with LIKE '%"run.failed"%'. secret is the signing
-- secret sealed with AES-256-GCM under a key derived from the server
-- secret (nonce first, the subscription id as additional data): a copy of
-- the database alone does not sign.
CREATE TABLE subscriptions (
    id         text PRIMARY KEY,
    url        text NOT NULL,
    events     text NOT NULL,
    secret     BLOB NOT NULL,
    created_by text NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL
);

-- What happened, once per event, written in the transaction of the change
-- it reports and only while some subscription hears its type. id is the
-- event id receivers de-duplicate on; data is the body's "data".
CREATE TABLE hook_events (
    id         text PRIMARY KEY,
    type       text NOT NULL,
    data       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX hook_events_created ON hook_events (created_at);

-- One row per subscription and event, written with the event. While
-- pending it is due at next_at; a claim moves next_at one lease ahead, so
-- a dispatcher that dies mid-delivery only delays it (it is sent again).
-- attempts fences the end of a delivery on its claim. subscription_id
-- has no foreign key on purpose: a change committing beside a concurrent
-- deletion of its subscription must not fail; the dispatcher drops
-- deliveries whose subscription is gone.
CREATE TABLE hook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription_id text NOT NULL,
    event_id        text NOT NULL REFERENCES hook_events (id) ON DELETE CASCADE,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','succeeded','failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_at         TIMESTAMP NOT NULL,
    locked_by       text,
    UNIQUE (subscription_id, event_id)
);
CREATE INDEX hook_deliveries_due ON hook_deliveries (next_at, id) WHERE status = 'pending';

-- Every attempt, as GET /api/v1/subscriptions/{id}/deliveries lists it:
-- status succeeded (a 2xx answer), retrying (another attempt is due at
-- next_at) or failed (the last one); code is the answer's HTTP status,
-- NULL when none came.
CREATE TABLE hook_attempts (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id     INTEGER NOT NULL REFERENCES hook_deliveries (id) ON DELETE CASCADE,
    subscription_id text NOT NULL,
    event_id        text NOT NULL,
    event_type      text NOT NULL,
    attempt         integer NOT NULL,
    status          text NOT NULL CHECK (status IN ('succeeded','retrying','failed')),
    code            integer,
    error           text NOT NULL DEFAULT '',
    at              TIMESTAMP NOT NULL,
    next_at         TIMESTAMP
);
CREATE INDEX hook_attempts_subscription ON hook_attempts (subscription_id, id DESC);
