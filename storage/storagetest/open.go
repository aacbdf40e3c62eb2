package storagetest

import (
	"log/slog"
	"testing"

	"github.com/tollgatehq/tollgate/storage"
)

// Open opens and migrates the database o names, for tests that drive
// storage or the engine without a server, and closes it when the test
// ends. Without o.Log, the database logs warnings to the test's output.
func Open(tb testing.TB, o storage.Opts) *storage.DB {
	tb.Helper()
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	db, err := storage.Open(tb.Context(), o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if err := db.Migrate(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	return db
}
