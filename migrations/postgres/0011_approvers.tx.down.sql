DROP INDEX suspensions_with_approvers;
ALTER TABLE suspensions DROP COLUMN approver_role;
ALTER TABLE suspensions DROP COLUMN approvers;
