DROP TABLE decision_links;
