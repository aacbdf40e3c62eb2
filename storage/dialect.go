package storage

import (
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
)

// The dialects are bun's with one method replaced. bun writes every jsonb
// model field through AppendJSON, whose stock version rewrites each
// "\u0000" it meets without noticing an escaped backslash before it: the
// text \u0000, encoded "\\u0000", becomes "\\\u0000" — a real NUL escape,
// which PostgreSQL refuses and SQLite stores as corrupted text. Values reach
// here as JSON that the domain has already checked (no NUL escapes), so
// quoting is all that is left to do.

type pgDialect struct{ *pgdialect.Dialect }

// AppendJSON quotes JSON text as an SQL string literal.
func (pgDialect) AppendJSON(b, jsonb []byte) []byte { return appendJSON(b, jsonb) }

type sqliteDialect struct{ *sqlitedialect.Dialect }

// AppendJSON quotes JSON text as an SQL string literal.
func (sqliteDialect) AppendJSON(b, jsonb []byte) []byte { return appendJSON(b, jsonb) }

// appendJSON writes jsonb as a standard SQL string literal: single quotes
// doubled, every other byte as it is (both databases treat backslashes in
// such a literal as ordinary characters).
func appendJSON(b, jsonb []byte) []byte {
	b = append(b, '\'')
	for _, c := range jsonb {
		if c == '\'' {
			b = append(b, '\'')
		}
		b = append(b, c)
	}
	return append(b, '\'')
}
