package storagetest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
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
	if err := FromTemplate(o); err != nil {
		tb.Fatal(err)
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

// sqliteTemplate is the file of an embedded database migrated once per
// test binary, which FromTemplate copies: migrating takes most of a
// second under the race detector, and the suites open hundreds of fresh
// databases.
var sqliteTemplate = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "tollgate-sqlite-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tollgate.db")
	ctx := context.Background()
	db, err := storage.Open(ctx, storage.Opts{SQLitePath: path, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	// Closing the last connection checkpoints the write-ahead log into
	// the file and removes it, so the file alone is the database.
	if err := db.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, errors.New("the template database kept its write-ahead log")
	}
	return os.ReadFile(path)
})

// FromTemplate writes a migrated embedded database where o's goes when o
// names a SQLite file, or a data folder, that holds none yet, so that a
// test's server or Migrate finds it current instead of migrating it. A
// database that exists, or one on PostgreSQL, is left alone.
func FromTemplate(o storage.Opts) error {
	if o.URL != "" {
		return nil
	}
	path := o.SQLitePath
	if path == "" {
		if o.DataDir == "" {
			return nil
		}
		if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
			return err
		}
		path = filepath.Join(o.DataDir, "tollgate.db")
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tpl, err := sqliteTemplate()
	if err != nil {
		return fmt.Errorf("storagetest: migrate the template database: %w", err)
	}
	return os.WriteFile(path, tpl, 0o600)
}
