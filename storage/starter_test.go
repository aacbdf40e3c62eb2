package storage_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

var (
	adminStarter   = domain.Starter{ID: "u-admin", Email: "admin@example.com", Role: domain.RoleAdmin}
	founderStarter = domain.Starter{ID: "u-ada", Email: "ada@example.com", Role: domain.RoleFounder}
)

// An idempotency key belongs to its starter: another person's start with
// the same key makes another run, never hands back the first one; the
// system's starts share one scope, as a person's do.
func TestIdempotencyKeyPerStarter(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		var n stepCounter
		open := pauseWorkflow("open", &n)
		open.AllowFounders = true
		e := engine.New(db, newRegistry(t, open), engine.Opts{})
		in := raw(map[string]string{"to": "everyone"})
		admins, created, err := e.StartAs(ctx, adminStarter, "open", in, "key-1")
		if err != nil || !created {
			t.Fatalf("the admin's start: %v %v", created, err)
		}
		if admins.StartedBy != adminStarter {
			t.Fatalf("the admin's run was started by %+v", admins.StartedBy)
		}
		founders, created, err := e.StartAs(ctx, founderStarter, "open", in, "key-1")
		if err != nil || !created || founders.ID == admins.ID {
			t.Fatalf("the founder's start with the admin's key = %s created=%v err=%v; want a run of their own", founders.ID, created, err)
		}
		again, created, err := e.StartAs(ctx, founderStarter, "open", in, "key-1")
		if err != nil || created || again.ID != founders.ID || again.StartedBy != founderStarter {
			t.Fatalf("the founder's repeat = %+v created=%v err=%v; want %s", again, created, err, founders.ID)
		}
		system, created, err := e.Start(ctx, "open", in, "key-1")
		if err != nil || !created || system.ID == admins.ID || system.ID == founders.ID || !system.StartedBy.System() {
			t.Fatalf("the system's start = %+v created=%v err=%v; want a run of its own", system, created, err)
		}
		if again, created, err := e.Start(ctx, "open", in, "key-1"); err != nil || created || again.ID != system.ID {
			t.Fatalf("the system's repeat = %s created=%v err=%v; want %s", again.ID, created, err, system.ID)
		}
		if got, err := db.Run(ctx, founders.ID); err != nil || got.StartedBy != founderStarter {
			t.Fatalf("stored starter = %+v, %v", got.StartedBy, err)
		}
		if k := count(t, db, "SELECT count(*) FROM runs WHERE idempotency_key = 'key-1'"); k != 3 {
			t.Fatalf("%d runs with the key; want 3", k)
		}

		// Concurrent starts by two people with one key: one run each.
		const callers = 16
		ids := make([]string, callers)
		var wg sync.WaitGroup
		ready := make(chan struct{})
		for i := range callers {
			wg.Go(func() {
				<-ready
				by := []domain.Starter{adminStarter, founderStarter}[i%2]
				r, _, err := e.StartAs(ctx, by, "open", raw(map[string]int{"x": 7}), "key-race")
				if err != nil {
					t.Errorf("concurrent start: %v", err)
					return
				}
				ids[i] = r.ID
			})
		}
		close(ready)
		wg.Wait()
		for i, id := range ids {
			if id != ids[i%2] || ids[0] == ids[1] {
				t.Fatalf("concurrent starts returned runs %v; want one per starter", ids)
			}
		}
	})
}

// A founder may start only a workflow that allows founders; a refused
// start creates nothing.
func TestFounderStartNeedsPermission(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		var n stepCounter
		e := engine.New(db, newRegistry(t, pauseWorkflow("staff-only", &n)), engine.Opts{})
		if _, _, err := e.StartAs(ctx, founderStarter, "staff-only", raw(1), "k"); !errors.Is(err, domain.ErrStartForbidden) {
			t.Fatalf("a founder's start = %v; want ErrStartForbidden", err)
		}
		if k := count(t, db, "SELECT count(*) FROM runs"); k != 0 {
			t.Fatalf("a refused start left %d runs", k)
		}
		if _, created, err := e.StartAs(ctx, adminStarter, "staff-only", raw(1), "k"); err != nil || !created {
			t.Fatalf("an admin's start: %v %v", created, err)
		}
	})
}
