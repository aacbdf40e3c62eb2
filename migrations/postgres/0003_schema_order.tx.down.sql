ALTER TABLE suspensions ALTER COLUMN resume_schema TYPE jsonb USING resume_schema::jsonb;
