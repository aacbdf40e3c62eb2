DROP TABLE failed_steps;
