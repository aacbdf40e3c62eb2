DROP INDEX suspensions_by_assignee;
DROP TRIGGER suspension_counts_delete;
DROP TRIGGER suspension_counts_update;
DROP TRIGGER suspension_counts_insert;
DROP TABLE suspension_count_deltas;
DROP TABLE suspension_counts;
