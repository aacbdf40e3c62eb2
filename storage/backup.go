package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Backup writes a consistent copy of the embedded database to path with
// SQLite's VACUUM INTO: one read transaction, so servers using the
// database go on writing while it runs, and the copy is what was committed
// when it began. The copy is written beside path and renamed into place
// once complete, so path never holds half a backup. An existing path is
// not overwritten. PostgreSQL is backed up with its own tools (pg_dump).
func (db *DB) Backup(ctx context.Context, path string) error {
	if db.dialect != SQLite {
		return errors.New("backup copies the embedded database; back up PostgreSQL with pg_dump")
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("backup: %s exists; name a new file", path)
	}
	partial := path + ".partial"
	_ = os.Remove(partial) // left by a backup that was cut off
	if _, err := db.bun.ExecContext(ctx, "VACUUM INTO ?", partial); err != nil {
		_ = os.Remove(partial)
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	if err := os.Link(partial, path); err != nil { // fails, rather than replaces, if path appeared meanwhile
		_ = os.Remove(partial)
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	return os.Remove(partial)
}
