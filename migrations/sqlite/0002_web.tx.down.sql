DROP TABLE audit_log;
DROP TABLE web_sessions;
