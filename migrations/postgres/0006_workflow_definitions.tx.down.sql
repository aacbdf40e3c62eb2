DROP TABLE workflow_definitions;
DROP FUNCTION workflow_definitions_immutable();
