package storage_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// An Idempotency-Key replays the winner's answer to the winner only: another
// caller who repeats the key and data has not resumed anything.
func TestResumeReplayIsPerCaller(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		var resumed atomic.Int64
		reg := domain.NewRegistry()
		if err := reg.Register(claimWorkflow(&resumed)); err != nil {
			t.Fatal(err)
		}
		e := startEngine(t, db, reg, engine.Opts{})
		run, _, err := e.Start(t.Context(), "claim", raw(map[string]string{"claimId": "c-9"}), "")
		if err != nil {
			t.Fatal(err)
		}
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)
		req := domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]any{"receiptIds": []string{"d"}}), By: "ada", RequestKey: "k-1"}
		if _, err := e.Resume(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Resume(t.Context(), req); err != nil {
			t.Fatalf("the winner's repeat: %v", err)
		}
		req.By = "mallory"
		_, err = e.Resume(t.Context(), req)
		var ce *domain.ConflictError
		if !errors.As(err, &ce) || ce.Code != domain.CodeAlreadyResumed {
			t.Fatalf("another caller's repeat: %v; want already_resumed", err)
		}
	})
}
