DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();
DROP TABLE web_sessions;
