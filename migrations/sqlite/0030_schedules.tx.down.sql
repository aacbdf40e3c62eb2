DROP TABLE schedule_fires;
DROP TABLE schedules;
