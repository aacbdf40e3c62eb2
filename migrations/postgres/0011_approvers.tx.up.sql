-- Who may act on a suspension, when its workflow names them: approvers'
-- emails (a JSON array of lower-case strings) and a role. Empty means the
-- default rule (staff, and the founder it is assigned to).
ALTER TABLE suspensions ADD COLUMN approvers text NOT NULL DEFAULT '[]';
ALTER TABLE suspensions ADD COLUMN approver_role text NOT NULL DEFAULT '';

-- A founder's list is what is assigned to them or names them: the second
-- arm of that OR scans only the few suspensions that name approvers.
CREATE INDEX suspensions_with_approvers ON suspensions (status, suspended_at, id)
    WHERE NOT precompleted AND approvers <> '[]';
