DROP INDEX suspensions_by_assignee;
DROP TRIGGER suspension_counts_delete ON suspensions;
DROP TRIGGER suspension_counts_update ON suspensions;
DROP TRIGGER suspension_counts_insert ON suspensions;
DROP FUNCTION suspension_count_deltas();
DROP TABLE suspension_count_deltas;
DROP TABLE suspension_counts;
