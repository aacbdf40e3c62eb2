-- Where a decision link comes from: 'staff' made it for someone's email
-- (POST /api/v1/suspensions/{id}/links), 'mail' is the Approve and Reject
-- buttons of a request mail to a person who may decide it.
ALTER TABLE decision_links ADD COLUMN origin text NOT NULL DEFAULT 'staff';
