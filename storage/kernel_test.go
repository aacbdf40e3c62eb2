package storage_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// claimWorkflow is the seed's verifyClaim → suspend → handleDocumentation.
func claimWorkflow(resumed *atomic.Int64) *domain.Workflow {
	return domain.NewWorkflow("claim", "1").
		Step("verifyClaim", func(ctx context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				ClaimID string `json:"claimId"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{
				Output: map[string]string{"status": "awaiting_input"},
				Events: []domain.StepEvent{{Type: "verification_suspended", Payload: map[string]string{"claimId": in.ClaimID}}},
				Commands: []domain.Command{
					domain.Suspend("awaiting_documentation", map[string]string{"claimId": in.ClaimID}, "handleDocumentation"),
					domain.Invoke("verifyClaim", nil), // discarded
				},
			}, nil
		}).
		Step("handleDocumentation", func(ctx context.Context, req domain.StepRequest) (domain.StepResult, error) {
			resumed.Add(1)
			var p struct {
				Checkpoint struct {
					ClaimID string `json:"claimId"`
				} `json:"checkpoint"`
				ResumeData struct {
					ReceiptIDs []string `json:"receiptIds"`
				} `json:"resumeData"`
			}
			if err := req.Bind(&p); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Output: map[string]any{"claimId": p.Checkpoint.ClaimID, "verdict": "verified", "documents": len(p.ResumeData.ReceiptIDs)}}, nil
		})
}

func TestSuspendResumeCycle(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		var resumed atomic.Int64
		reg := domain.NewRegistry()
		if err := reg.Register(claimWorkflow(&resumed)); err != nil {
			t.Fatal(err)
		}
		e := startEngine(t, db, reg, engine.Opts{})
		run, created, err := e.Start(t.Context(), "claim", raw(map[string]string{"claimId": "c-1"}), "")
		if err != nil || !created {
			t.Fatalf("start: %v %v", created, err)
		}
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)
		if s.Reason != "awaiting_documentation" || s.ResumeStep != "handleDocumentation" || string(s.Checkpoint) == "" {
			t.Fatalf("suspension = %+v", s)
		}
		if _, err := e.Resume(t.Context(), domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]any{"receiptIds": []string{"d1", "d2"}}), By: "tester"}); err != nil {
			t.Fatal(err)
		}
		done := waitRun(t, db, run.ID, domain.RunSucceeded, domain.RunFailed)
		if done.Status != domain.RunSucceeded {
			t.Fatalf("run = %+v", done)
		}
		var out map[string]any
		json.Unmarshal(done.Output, &out)
		if out["verdict"] != "verified" || out["documents"] != float64(2) {
			t.Fatalf("output = %s", done.Output)
		}
		events, err := db.Events(t.Context(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for i, ev := range events {
			if ev.Seq != int64(i+1) {
				t.Fatalf("event %d has seq %d", i, ev.Seq)
			}
			types = append(types, ev.Type)
		}
		t.Logf("events: %v", types)
		if resumed.Load() != 1 {
			t.Fatalf("resume step ran %d times", resumed.Load())
		}
	})
}
