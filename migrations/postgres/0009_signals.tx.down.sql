DROP TABLE signals;
