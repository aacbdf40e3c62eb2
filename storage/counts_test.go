package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// askAsInput, for askOnce, pauses with the reason and kind the run's
// input names.
func askAsInput(req domain.StepRequest) domain.Command {
	var in struct {
		Reason string `json:"reason"`
		Kind   string `json:"kind"`
	}
	if err := req.Bind(&in); err != nil {
		return domain.Fail("bad_input", err.Error())
	}
	return domain.Suspend(in.Reason, map[string]string{"run": req.RunID}, "", domain.WithKind(domain.SuspensionKind(in.Kind)))
}

// groupCounts is PendingCounts as two maps, zero counts left out.
func groupCounts(t testing.TB, db *storage.DB, workflowID string) (reasons, kinds map[string]int) {
	t.Helper()
	rs, ks, err := db.PendingCounts(t.Context(), workflowID)
	if err != nil {
		t.Fatal(err)
	}
	reasons, kinds = map[string]int{}, map[string]int{}
	for _, c := range rs {
		reasons[c.Name] = c.N
	}
	for _, c := range ks {
		kinds[c.Name] = c.N
	}
	return reasons, kinds
}

// trueCounts counts the pending suspensions themselves.
func trueCounts(t testing.TB, db *storage.DB, workflowID string) (reasons, kinds map[string]int) {
	t.Helper()
	reasons, kinds = map[string]int{}, map[string]int{}
	for _, by := range []struct {
		col string
		m   map[string]int
	}{{"reason", reasons}, {"kind", kinds}} {
		rows, err := db.Bun().QueryContext(t.Context(), "SELECT "+by.col+", count(*) FROM suspensions WHERE status = 'pending' AND NOT precompleted AND (? = '' OR workflow_id = ?) GROUP BY 1", workflowID, workflowID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				t.Fatal(err)
			}
			by.m[k] = n
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return reasons, kinds
}

// assertCounts checks PendingCounts against the suspensions, for every
// workflow and for each one, before and after the deltas are folded.
func assertCounts(t testing.TB, db *storage.DB, when string, workflows ...string) {
	t.Helper()
	for _, compact := range []bool{false, true} {
		if compact {
			if _, err := db.CompactCounts(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n := count(t, db, "SELECT count(*) FROM suspension_count_deltas"); n != 0 {
				t.Fatalf("%s: %d deltas left after compaction", when, n)
			}
		}
		for _, wf := range append([]string{""}, workflows...) {
			gotR, gotK := groupCounts(t, db, wf)
			wantR, wantK := trueCounts(t, db, wf)
			if fmt.Sprint(gotR) != fmt.Sprint(wantR) || fmt.Sprint(gotK) != fmt.Sprint(wantK) {
				t.Fatalf("%s (workflow %q, compacted %v): counts by reason %v, by kind %v; the suspensions say %v and %v",
					when, wf, compact, gotR, gotK, wantR, wantK)
			}
		}
	}
}

// The inbox's counts follow every way a suspension starts and stops being
// pending: a pause, a resume, a cancelled run, a resume that arrives before
// its pause (not counted while it waits), and that pause arriving.
func TestPendingCountsFollowEverySuspensionChange(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		gate := make(chan struct{})
		slow := domain.NewWorkflow("slow", "1").
			Step("wait", func(ctx context.Context, req domain.StepRequest) (domain.StepResult, error) {
				<-gate
				return domain.StepResult{Commands: []domain.Command{domain.Suspend("late", nil, "done")}}, nil
			}).
			Step("done", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{}, nil
			})
		e := startEngine(t, db, newRegistry(t, askOnce("claims", askAsInput), askOnce("expenses", askAsInput), slow), engine.Opts{})
		assertCounts(t, db, "empty", "claims")

		var runs []domain.Run
		for i, in := range []map[string]string{
			{"reason": "docs", "kind": "input"}, {"reason": "docs", "kind": "input"}, {"reason": "approve", "kind": "approval"},
			{"reason": "approve", "kind": "approval"}, {"reason": "ping", "kind": "signal"},
		} {
			wf := "claims"
			if i%2 == 1 {
				wf = "expenses"
			}
			r := startRun(t, e, wf, in)
			waitRun(t, db, r.ID, domain.RunSuspended)
			runs = append(runs, r)
		}
		assertCounts(t, db, "after five pauses", "claims", "expenses")

		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: pendingSuspension(t, db, runs[0].ID).ID, Data: raw(1), By: "t"}); err != nil {
			t.Fatal(err)
		}
		waitRun(t, db, runs[0].ID, domain.RunSucceeded)
		if _, err := e.Cancel(ctx, domain.CancelRequest{RunID: runs[2].ID, By: "t"}); err != nil {
			t.Fatal(err)
		}
		assertCounts(t, db, "after a resume and a cancel", "claims", "expenses")

		early := startRun(t, e, "slow", nil)
		if _, err := e.Resume(ctx, domain.ResumeRequest{RunID: early.ID, StepKey: "wait", Data: raw(2), By: "t"}); err != nil {
			t.Fatal(err)
		}
		assertCounts(t, db, "with a resume waiting for its pause", "slow")
		close(gate)
		waitRun(t, db, early.ID, domain.RunSucceeded)
		assertCounts(t, db, "after the early resume's pause", "slow", "claims")
	})
}

// Counts stay exact while many runs pause and resume at once and, on
// PostgreSQL, several compactions fold deltas concurrently with them: each
// change lands exactly once.
func TestPendingCountsUnderConcurrency(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		e := startEngine(t, db, newRegistry(t, askOnce("claims", askAsInput), askOnce("expenses", askAsInput)), engine.Opts{Workers: 8, PollInterval: 5 * time.Millisecond})
		stop := make(chan struct{})
		var compactors sync.WaitGroup
		var folded atomic.Int64
		for range 3 {
			compactors.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					n, err := db.CompactCounts(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					folded.Add(int64(n))
				}
			})
		}
		const clients, perClient = 8, 12
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				for i := range perClient {
					in := map[string]string{"reason": fmt.Sprintf("r%d", rand.IntN(3)), "kind": []string{"input", "webhook", "signal"}[rand.IntN(3)]}
					r, _, err := e.Start(ctx, []string{"claims", "expenses"}[(c+i)%2], raw(in), "")
					if err != nil {
						t.Error(err)
						return
					}
					waitRun(t, db, r.ID, domain.RunSuspended)
					if i%3 == 0 {
						continue // left pending
					}
					if _, err := e.Resume(ctx, domain.ResumeRequest{RunID: r.ID, StepKey: "ask", Data: raw(i), By: "t"}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(stop)
		compactors.Wait()
		if db.Dialect() == storage.Postgres && folded.Load() == 0 {
			t.Fatal("the compactions folded nothing while runs changed")
		}
		assertCounts(t, db, "after concurrent pauses, resumes and compactions", "claims", "expenses")
	})
}
