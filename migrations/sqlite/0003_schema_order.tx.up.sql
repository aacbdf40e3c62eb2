-- PostgreSQL stores resume schemas as json rather than jsonb from here on,
-- to keep their property order; SQLite stores the text as written already.
SELECT 1;
