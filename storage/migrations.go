package storage

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MigrationState is one migration and whether it is applied.
type MigrationState struct {
	Name      string
	Comment   string
	Applied   bool
	AppliedAt time.Time
}

// MigrationStatus lists every migration this version knows, oldest first,
// with whether the database has it. The table of applied migrations is
// created if it is missing (as Migrate does), so a fresh database lists
// every migration as pending.
func (db *DB) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	m, err := db.migrator()
	if err != nil {
		return nil, err
	}
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("init migrations: %w", err)
	}
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]MigrationState, len(ms))
	for i, mig := range ms {
		out[i] = MigrationState{Name: mig.Name, Comment: mig.Comment, Applied: mig.IsApplied(), AppliedAt: mig.MigratedAt.UTC()}
	}
	return out, nil
}

// MigrateDown undoes the last applied migration, with its down script in
// its transaction, and returns its name. It holds the migrations' lock, so
// it never runs beside another server's Migrate. A down migration may drop
// what the newer version wrote: take a backup first.
func (db *DB) MigrateDown(ctx context.Context) (string, error) {
	m, err := db.migrator()
	if err != nil {
		return "", err
	}
	if err := m.Init(ctx); err != nil {
		return "", fmt.Errorf("init migrations: %w", err)
	}
	if err := lockMigrations(ctx, m); err != nil {
		return "", err
	}
	defer m.Unlock(context.WithoutCancel(ctx)) //nolint:errcheck // best effort; the lock row is harmless
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return "", err
	}
	applied := ms.Applied() // newest first
	if len(applied) == 0 {
		return "", errors.New("no migration is applied")
	}
	last := applied[0]
	if last.Down == nil {
		return "", fmt.Errorf("migration %s has no down script", last.Name)
	}
	if err := last.Down(ctx, m, &last); err != nil {
		return "", fmt.Errorf("%s: down: %w", last.Name, err)
	}
	if err := m.MarkUnapplied(ctx, &last); err != nil {
		return "", err
	}
	db.log.InfoContext(ctx, "Undid a migration", "migration", last.Name)
	return last.Name, nil
}
