ALTER TABLE votes DROP COLUMN link_creator;
