-- How an approval is decided (quorum, rejections, separation of duties,
-- a required comment on rejection: domain.ApprovalPolicy, as JSON) and
-- the requesters its policy found in the run's input when it paused (a
-- JSON array of lower-case emails).
ALTER TABLE suspensions ADD COLUMN policy json NOT NULL DEFAULT '{}';
ALTER TABLE suspensions ADD COLUMN requesters text NOT NULL DEFAULT '[]';

-- Each person's decision on an approval, one a person: who, which, why,
-- through what and when. The approval resolves, in the transaction of
-- the vote that reaches its policy's threshold, with every vote.
CREATE TABLE votes (
    suspension_id text NOT NULL REFERENCES suspensions (id) ON DELETE CASCADE,
    voter         text NOT NULL,
    decision      text NOT NULL CHECK (decision IN ('approved', 'rejected')),
    comment       text NOT NULL DEFAULT '',
    channel       text NOT NULL,
    request_key   text,
    at            TIMESTAMP NOT NULL,
    PRIMARY KEY (suspension_id, voter)
);
