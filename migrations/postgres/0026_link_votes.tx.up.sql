-- A vote cast through a decision link names the member of staff who made
-- the link: it counts as theirs too, so whoever makes links adds at most
-- one vote to a decision in all.
ALTER TABLE votes ADD COLUMN link_creator text NOT NULL DEFAULT '';
