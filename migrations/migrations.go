// Package migrations embeds the SQL migrations, one folder per dialect with
// the same numbers in both. Files named *.tx.up.sql run in a transaction.
// A released migration is never edited: changes go into the next number, in
// both folders, in one commit.
package migrations

import "embed"

// FS holds postgres/ and sqlite/.
//
//go:embed postgres sqlite
var FS embed.FS
