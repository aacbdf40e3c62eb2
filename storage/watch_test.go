package storage_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// heard collects the change notices a process hears.
type heard struct {
	mu  sync.Mutex
	ids []string
}

func hear(db *storage.DB) *heard {
	h := &heard{}
	db.OnChange(func(runID string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.ids = append(h.ids, runID)
	})
	return h
}

func (h *heard) has(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.ids, id)
}

// sender is another process's connection to the database, which commits
// change notices as its writers do.
type sender struct {
	t    *testing.T
	conn *pgx.Conn
}

func newSender(t *testing.T, dsn string) *sender {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return &sender{t: t, conn: conn}
}

func (s *sender) notify(runID string) {
	s.t.Helper()
	if _, err := s.conn.Exec(s.t.Context(), "SELECT pg_notify('tollgate_changes', $1)", runID); err != nil {
		s.t.Fatal(err)
	}
}

// changesListened reports whether db's listening connection last ran
// LISTEN on the changes channel (true) or UNLISTEN (false), as the
// server's pg_stat_activity shows it.
func changesListened(t *testing.T, db *storage.DB) bool {
	t.Helper()
	var last []string
	err := db.Bun().NewRaw(`SELECT query FROM pg_stat_activity
		WHERE datname = current_database() AND query IN ('LISTEN tollgate_jobs', 'LISTEN tollgate_changes', 'UNLISTEN tollgate_changes')`).Scan(t.Context(), &last)
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 1 {
		t.Fatalf("listening connections = %q; want one", last)
	}
	return last[0] == "LISTEN tollgate_changes"
}

// A process on PostgreSQL hears change notices only while something in
// it watches. Watch returns once the server has confirmed the LISTEN, so
// a change committed right after it is heard; notices sent while nothing
// watched (before the first watcher, and after the last one left and the
// grace ran out) never reach it.
func TestChangesHeardOnlyWhileWatched(t *testing.T) {
	t.Parallel()
	dsn := storagetest.NewDatabase(t)
	db := openDB(t, storage.Opts{URL: dsn})
	db.SetWatchGrace(50 * time.Millisecond)
	notify := newSender(t, dsn).notify
	h := hear(db)
	ctx := t.Context()

	waitFor(t, 10*time.Second, "the listening connection", func() bool { return !changesListened(t, db) })
	notify("unwatched-before")
	for i := range 20 {
		// The first read after Watch must not miss a change: the notice
		// sent at once after it arrives, every time.
		unwatch := db.Watch(ctx)
		if !changesListened(t, db) {
			t.Fatalf("round %d: Watch returned before the server confirmed LISTEN", i)
		}
		id := "watched-" + string(rune('a'+i))
		notify(id)
		waitFor(t, 10*time.Second, "the notice "+id, func() bool { return h.has(id) })
		unwatch()
		if i%2 == 0 { // half the rounds come back within the grace, half after
			waitFor(t, 10*time.Second, "UNLISTEN after the grace", func() bool { return !changesListened(t, db) })
		}
	}
	waitFor(t, 10*time.Second, "UNLISTEN after the grace", func() bool { return !changesListened(t, db) })
	notify("unwatched-after")
	unwatch := db.Watch(ctx)
	defer unwatch()
	notify("watched-last")
	waitFor(t, 10*time.Second, "the last notice", func() bool { return h.has("watched-last") })
	// Notices arrive in commit order: had the unwatched ones been heard,
	// they would be here by now.
	for _, id := range []string{"unwatched-before", "unwatched-after"} {
		if h.has(id) {
			t.Errorf("%s was heard with nothing watching", id)
		}
	}
}

// Two watchers share one LISTEN: the channel stays listened while either
// watches, and is UNLISTENed only after both have left.
func TestWatchersShareTheListen(t *testing.T) {
	t.Parallel()
	db := openDB(t, storage.Opts{URL: storagetest.NewDatabase(t)})
	db.SetWatchGrace(time.Millisecond)
	ctx := t.Context()
	first, second := db.Watch(ctx), db.Watch(ctx)
	first()
	first() // a second call changes nothing
	time.Sleep(100 * time.Millisecond)
	if !changesListened(t, db) {
		t.Fatal("UNLISTEN while a watcher remained")
	}
	second()
	waitFor(t, 10*time.Second, "UNLISTEN after the last watcher", func() bool { return !changesListened(t, db) })
}

// When the listening connection breaks while something watches, the
// listener reconnects, LISTENs again and tells OnChange "" so that
// watchers re-read what they may have missed; a Watch made while it is
// down returns at once rather than wait for the reconnect.
func TestWatchersResyncAfterTheListenerReconnects(t *testing.T) {
	t.Parallel()
	dsn := storagetest.NewDatabase(t)
	db := openDB(t, storage.Opts{URL: dsn})
	other := newSender(t, dsn)
	h := hear(db)
	ctx := t.Context()
	defer db.Watch(ctx)()
	if _, err := other.conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN tollgate_changes'`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a re-sync after the reconnect", func() bool { return h.has("") })
	if !changesListened(t, db) {
		t.Fatal("the changes channel is not listened after the reconnect")
	}
	other.notify("after-reconnect")
	waitFor(t, 10*time.Second, "a notice after the reconnect", func() bool { return h.has("after-reconnect") })

	// A watcher arriving while the connection is down goes on at once.
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	db.Close()
	began := time.Now()
	db.Watch(short)()
	if took := time.Since(began); took > time.Second {
		t.Errorf("Watch on a closed listener took %v; want it at once", took)
	}
}
