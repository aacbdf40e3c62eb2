-- Finished runs by when they last changed, oldest first, for retention:
-- housekeeping deletes those older than the retention period in bounded
-- batches, and this keeps each batch a short index range scan however many
-- runs are still live. Only terminal runs are indexed; the predicate is the
-- one the delete query writes, so the planner can match it.
CREATE INDEX runs_finished ON runs (updated_at, id) WHERE status IN ('succeeded', 'failed', 'cancelled');
