DROP TABLE work_items;
