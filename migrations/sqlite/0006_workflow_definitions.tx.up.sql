-- Declarative workflow documents, registered by API or loaded from a folder
-- at start. A version is immutable once registered: body holds the document
-- in canonical form (keys sorted, no insignificant space), so the same
-- document registered again is recognised as the same.
CREATE TABLE workflow_definitions (
    workflow_id text NOT NULL,
    version     text NOT NULL,
    body        text NOT NULL,
    created_by  text NOT NULL DEFAULT '',
    created_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (workflow_id, version)
);
CREATE INDEX workflow_definitions_latest ON workflow_definitions (workflow_id, created_at DESC);

CREATE TRIGGER workflow_definitions_immutable BEFORE UPDATE ON workflow_definitions
BEGIN
    SELECT RAISE(ABORT, 'workflow definitions are immutable');
END;
