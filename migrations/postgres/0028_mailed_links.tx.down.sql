ALTER TABLE decision_links DROP COLUMN origin;
