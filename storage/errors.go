package storage

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/tollgatehq/tollgate/domain"
)

// translate maps driver errors to domain errors. It is the one place that
// knows driver error codes; nothing matches error strings.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if isNoRows(err) {
		return domain.ErrNotFound
	}
	return err
}

// PostgreSQL SQLSTATEs and SQLite extended result codes we act on.
const (
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
	pgUniqueViolation      = "23505"
	// pgFeatureNotSupported is, for a prepared statement, "cached plan
	// must not change result type".
	pgFeatureNotSupported  = "0A000"
	sqliteConstraintUnique = 2067
	sqliteBusy             = 5
)

// retryable reports a transaction that failed only because of concurrency
// and can run again from the start.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == pgSerializationFailure || pe.Code == pgDeadlockDetected
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqliteBusy
	}
	return false
}

// isUniqueViolation reports a unique-constraint failure on either dialect.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == pgUniqueViolation
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqliteConstraintUnique
	}
	return false
}
