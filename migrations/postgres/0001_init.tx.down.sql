DROP TABLE api_keys; DROP TABLE users; DROP TABLE jobs; DROP TABLE suspensions; DROP FUNCTION suspensions_write_once(); DROP TABLE events; DROP TABLE runs;
