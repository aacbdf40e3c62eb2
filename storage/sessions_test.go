package storage_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

func TestSessions(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		u, err := db.CreateUser(ctx, domain.User{ID: "u-1", Email: "Rev@Example.com", Role: domain.RoleReviewer, CreatedAt: now}, "hash")
		if err != nil {
			t.Fatal(err)
		}
		hash := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
		for _, id := range []string{"a", "b"} {
			if err := db.CreateSession(ctx, domain.Session{IDHash: hash(id), UserID: u.ID, Data: map[string]string{"k": id}, CreatedAt: now, SeenAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		s, who, err := db.SessionByHash(ctx, hash("a"), now.Add(time.Minute))
		if err != nil || who.Email != "rev@example.com" || who.Role != domain.RoleReviewer || s.Data["k"] != "a" {
			t.Fatalf("session = %+v, %+v, %v", s, who, err)
		}
		if _, _, err := db.SessionByHash(ctx, hash("a"), now.Add(time.Hour)); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("expired session = %v; want ErrNotFound", err)
		}
		if err := db.TouchSession(ctx, hash("a"), now.Add(30*time.Minute), now.Add(2*time.Hour), map[string]string{"k": "touched"}); err != nil {
			t.Fatal(err)
		}
		if s, _, err := db.SessionByHash(ctx, hash("a"), now.Add(90*time.Minute)); err != nil || s.Data["k"] != "touched" {
			t.Fatalf("touched session = %+v, %v", s, err)
		}
		if _, _, err := db.SessionByHash(ctx, hash("nope"), now); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("unknown session = %v", err)
		}
		if n, err := db.DeleteUserSessions(ctx, u.ID); err != nil || n != 2 {
			t.Fatalf("delete user sessions = %d, %v; want 2", n, err)
		}
		if _, _, err := db.SessionByHash(ctx, hash("b"), now); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("session after logout everywhere = %v", err)
		}
		if err := db.CreateSession(ctx, domain.Session{IDHash: hash("old"), UserID: u.ID, CreatedAt: now, SeenAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if n, err := db.DeleteExpiredSessions(ctx, now.Add(time.Hour)); err != nil || n != 1 {
			t.Fatalf("delete expired = %d, %v; want 1", n, err)
		}
	})
}

func TestAuditLogIsAppendOnly(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		start := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		for i := range 7 {
			action := "suspension.resume"
			if i%2 == 0 {
				action = "login"
			}
			if err := db.AppendAudit(ctx, domain.AuditEntry{At: start.Add(time.Duration(i) * time.Minute), ActorID: "u-1", ActorEmail: "a@example.com",
				Action: action, Subject: fmt.Sprintf("s-%d", i), WorkflowID: "wf", Data: json.RawMessage(`{"i":` + fmt.Sprint(i) + `}`), Address: "127.0.0.1"}); err != nil {
				t.Fatal(err)
			}
		}
		var all []domain.AuditEntry
		cursor := ""
		for {
			page, next, err := db.Audit(ctx, domain.AuditFilter{Limit: 3, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page...)
			if next == "" {
				break
			}
			cursor = next
		}
		if len(all) != 7 || all[0].Subject != "s-6" || all[6].Subject != "s-0" {
			t.Fatalf("pages gave %d entries, first %q last %q; want 7 newest first", len(all), all[0].Subject, all[len(all)-1].Subject)
		}
		logins, _, err := db.Audit(ctx, domain.AuditFilter{Action: "login", From: start.Add(time.Minute), To: start.Add(5 * time.Minute)})
		if err != nil || len(logins) != 2 {
			t.Fatalf("logins between minute 1 and 5 = %d, %v; want 2", len(logins), err)
		}
		for _, stmt := range []string{"UPDATE audit_log SET action = 'nothing'", "DELETE FROM audit_log"} {
			if _, err := db.Bun().ExecContext(context.Background(), stmt); err == nil {
				t.Errorf("%s succeeded; the audit log must refuse it", stmt)
			}
		}
		if got, _, _ := db.Audit(ctx, domain.AuditFilter{}); len(got) != 7 {
			t.Fatalf("audit log has %d entries after refused changes; want 7", len(got))
		}
	})
}

// Every committed change of a run is announced: in-process on SQLite, to
// every process sharing the database that watches on PostgreSQL (here,
// through the store's own listener).
func TestChangesAreAnnounced(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		seen := make(chan string, 64)
		t.Cleanup(db.Watch(t.Context()))
		db.OnChange(func(runID string) {
			select {
			case seen <- runID:
			default:
			}
		})
		var n stepCounter
		e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n)), engine.Opts{})
		run := startRun(t, e, "pause", nil)
		waitChange := func(what string) {
			t.Helper()
			deadline := time.After(10 * time.Second)
			for {
				select {
				case id := <-seen:
					if id == run.ID {
						return
					}
				case <-deadline:
					t.Fatalf("no change announced for %s", what)
				}
			}
		}
		waitChange("the start")
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)
		for len(seen) > 0 {
			<-seen
		}
		if _, err := e.Resume(t.Context(), domain.ResumeRequest{SuspensionID: s.ID, By: "tester"}); err != nil {
			t.Fatal(err)
		}
		waitChange("the resume")
		waitRun(t, db, run.ID, domain.RunSucceeded)
	})
}

// A resume's audit entry commits with the resume: of concurrent resumes
// only the winner's is written, with the suspension as its subject; a
// resume kept before its pause is audited too.
func TestResumeAuditCommitsWithTheWinner(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		e := startEngine(t, db, newRegistry(t, askOnce("ask", askAsInput)), engine.Opts{})
		run := startRun(t, e, "ask", map[string]string{"reason": "docs", "kind": "input"})
		waitRun(t, db, run.ID, domain.RunSuspended)
		sp := pendingSuspension(t, db, run.ID)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				_, _ = e.Resume(ctx, domain.ResumeRequest{SuspensionID: sp.ID, Data: raw(i), By: fmt.Sprintf("u%d", i),
					Audit: &domain.AuditEntry{At: time.Now(), ActorEmail: fmt.Sprintf("u%d", i), Action: "suspension.resume"}})
			})
		}
		wg.Wait()
		entries, _, err := db.Audit(ctx, domain.AuditFilter{Action: "suspension.resume"})
		if err != nil {
			t.Fatal(err)
		}
		won, err := db.Suspension(ctx, sp.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Subject != sp.ID || entries[0].WorkflowID != "ask" || entries[0].ActorEmail != won.ResumedBy {
			t.Fatalf("audit entries %+v; want one, by the winner %s", entries, won.ResumedBy)
		}

		later := startRun(t, e, "ask", map[string]string{"reason": "docs", "kind": "input"})
		early, err := e.Resume(ctx, domain.ResumeRequest{RunID: later.ID, StepKey: "ask", Data: raw(1), By: "early",
			Audit: &domain.AuditEntry{At: time.Now(), ActorEmail: "early", Action: "suspension.resume"}})
		if err != nil {
			t.Fatal(err)
		}
		entries, _, err = db.Audit(ctx, domain.AuditFilter{ActorEmail: "early"})
		if err != nil || len(entries) != 1 || entries[0].Subject != early.ID {
			t.Fatalf("audit of an early resume: %+v, %v", entries, err)
		}
	})
}
