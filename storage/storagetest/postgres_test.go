package storagetest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tollgatehq/tollgate/storage/storagetest"
)

func TestMain(m *testing.M) { storagetest.Main(m) }

func TestNewDatabaseIsolatesTests(t *testing.T) {
	t.Parallel()
	first := currentDatabase(t, storagetest.NewDatabase(t))
	second := currentDatabase(t, storagetest.NewDatabase(t))
	if first == second {
		t.Fatalf("NewDatabase returned the same database %q twice", first)
	}
}

func TestNewDatabaseDropsOnCleanup(t *testing.T) {
	t.Parallel()
	var name string
	// The subtest's cleanups have run by the time t.Run returns.
	t.Run("create", func(t *testing.T) {
		name = currentDatabase(t, storagetest.NewDatabase(t))
	})
	conn := connect(t, storagetest.PostgresURL(t))
	var exists bool
	err := conn.QueryRow(t.Context(),
		"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	if err != nil {
		t.Fatalf("look up database %s: %v", name, err)
	}
	if exists {
		t.Errorf("database %s still exists after its test finished", name)
	}
}

// currentDatabase checks that dsn accepts queries and returns the name of the
// database it points to.
func currentDatabase(t *testing.T, dsn string) string {
	t.Helper()
	conn := connect(t, dsn)
	var one int
	if err := conn.QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 on %s = %d, %v; want 1, nil", dsn, one, err)
	}
	var name string
	if err := conn.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatalf("SELECT current_database() on %s: %v", dsn, err)
	}
	return name
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", dsn, err)
	}
	// Close before NewDatabase's cleanup drops the database, which is
	// registered earlier and so runs later.
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
