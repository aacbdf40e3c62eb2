-- The secret every server on this database derives resume and receipt
-- tokens from: one row, written by the first server to start, so that a
-- token one server hands out checks on all of them. TOLLGATE_SECRET, when
-- set, is used instead.
CREATE TABLE server_secret (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    secret BLOB NOT NULL
);
