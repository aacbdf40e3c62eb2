DROP INDEX runs_finished;
