DROP TABLE api_keys; DROP TABLE users; DROP TABLE jobs; DROP TABLE suspensions; DROP TABLE events; DROP TABLE runs;
