DROP TABLE server_secret;
