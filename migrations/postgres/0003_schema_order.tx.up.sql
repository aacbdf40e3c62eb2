-- A resume schema is shown as a form in its own property order, which jsonb
-- does not keep (it orders keys by length). json keeps the text as written.
ALTER TABLE suspensions ALTER COLUMN resume_schema TYPE json USING resume_schema::json;
