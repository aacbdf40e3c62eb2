DROP TABLE workflow_definitions;
