-- A suspension's presentation besides its title: the fields people see in
-- the inbox and on the request (a JSON array of {label, value, format}),
-- and the human name of its reason.
ALTER TABLE suspensions ADD COLUMN fields json NOT NULL DEFAULT '[]';
ALTER TABLE suspensions ADD COLUMN reason_label text NOT NULL DEFAULT '';
