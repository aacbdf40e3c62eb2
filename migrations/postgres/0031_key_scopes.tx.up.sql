-- An API key may be scoped to fewer rights than its user: the scopes it
-- names, space-separated; none (the empty string) is all its user's.
ALTER TABLE api_keys ADD COLUMN scopes text NOT NULL DEFAULT '';
