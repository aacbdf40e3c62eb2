package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine/enginetest"
	"github.com/tollgatehq/tollgate/storage"
)

// The engine's conformance suite, on a fresh database of each dialect per
// test.
func TestEngineConformance(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			enginetest.Run(t, func(t *testing.T) enginetest.Store {
				return conformanceStore{openDB(t, dialectOpts(t, d))}
			})
		})
	}
}

// conformanceStore is the store with the reads the suite needs beyond
// domain.Store; tests make them in SQL, as the store has no caller for them.
type conformanceStore struct{ *storage.DB }

func (s conformanceStore) RunJobs(ctx context.Context, runID string) ([]enginetest.JobState, error) {
	var rows []struct {
		ID           int64          `bun:"id"`
		Kind         domain.JobKind `bun:"kind"`
		Step         string         `bun:"step"`
		SuspensionID *string        `bun:"suspension_id"`
		Status       string         `bun:"status"`
		RunAt        time.Time      `bun:"run_at"`
		Attempt      int            `bun:"attempt"`
		LockedBy     *string        `bun:"locked_by"`
	}
	err := s.Bun().NewRaw("SELECT id, kind, step, suspension_id, status, run_at, attempt, locked_by FROM jobs WHERE run_id = ? ORDER BY id", runID).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	jobs := make([]enginetest.JobState, len(rows))
	for i, r := range rows {
		jobs[i] = enginetest.JobState{ID: r.ID, Kind: r.Kind, Step: r.Step, SuspensionID: orEmpty(r.SuspensionID), RunAt: r.RunAt.UTC(),
			Attempt: r.Attempt, Running: r.Status == "running", LockedBy: orEmpty(r.LockedBy)}
	}
	return jobs, nil
}

func (s conformanceStore) RunSignals(ctx context.Context, runID string) ([]domain.Signal, error) {
	var rows []struct {
		Name        string     `bun:"name"`
		SignalID    string     `bun:"signal_id"`
		Payload     []byte     `bun:"payload"`
		SentBy      string     `bun:"sent_by"`
		CreatedAt   time.Time  `bun:"created_at"`
		StepKey     *string    `bun:"step_key"`
		DeliveredAt *time.Time `bun:"delivered_at"`
	}
	err := s.Bun().NewRaw("SELECT name, signal_id, payload, sent_by, created_at, step_key, delivered_at FROM signals WHERE run_id = ? ORDER BY created_at, id", runID).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	sigs := make([]domain.Signal, len(rows))
	for i, r := range rows {
		sigs[i] = domain.Signal{RunID: runID, Name: r.Name, SignalID: r.SignalID, Payload: r.Payload, SentBy: r.SentBy,
			SentAt: r.CreatedAt.UTC(), StepKey: orEmpty(r.StepKey), DeliveredAt: r.DeliveredAt}
	}
	return sigs, nil
}

// orEmpty is a nullable column's text, empty for NULL.
func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
