package storage

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun"
)

// A transaction that needs a hot statement not yet prepared prepares it
// on its own connection: preparing it on the database would wait for
// another connection of the pool, which need not come while the
// transaction holds the write lock (here the pool has no other). The
// shared statement is prepared once the transaction has ended.
func TestPreparedInNeedsNoSecondConnection(t *testing.T) {
	db, err := Open(t.Context(), Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	db.bun.DB.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err = db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		stmt, err := db.preparedIn(ctx, tx, sqliteUpdateRun)
		if err == nil && stmt == nil {
			err = errors.New("no statement inside a transaction")
		}
		return err
	})
	if err != nil {
		t.Fatalf("a transaction's first use of a hot statement: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := db.stmts.Load(sqliteUpdateRun); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shared statement was not prepared after the transaction ended")
		}
	}
}
