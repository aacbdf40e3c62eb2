package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

func TestDecideReport(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ok := domain.StepOutcome{Success: true, Outputs: json.RawMessage(`{"n":1}`)}
	item := func(st domain.WorkState) domain.WorkItem {
		return domain.WorkItem{ID: "wi-1", RunID: "r1", State: st, UpdatedAt: at.Add(-time.Hour)}
	}
	tests := []struct {
		name    string
		state   domain.WorkState
		run     domain.RunStatus
		want    domain.WorkState // the item afterwards
		changed bool
		resume  bool
		code    string // of the refusal
	}{
		{"active item, live run: taken", domain.WorkActive, domain.RunSuspended, domain.WorkSucceeded, true, true, ""},
		{"not completed item, live run: taken", domain.WorkNotCompleted, domain.RunRunning, domain.WorkSucceeded, true, true, ""},
		{"active item, cancelled run: refused, item failed", domain.WorkActive, domain.RunCancelled, domain.WorkFailed, true, false, domain.CodeWorkItemRunEnded},
		{"active item, failed run: refused, item failed", domain.WorkActive, domain.RunFailed, domain.WorkFailed, true, false, domain.CodeWorkItemRunEnded},
		{"finished item, cancelled run: a repeat", domain.WorkSucceeded, domain.RunCancelled, domain.WorkSucceeded, false, false, domain.CodeWorkItemFinished},
		{"failed item, live run: a different outcome", domain.WorkFailed, domain.RunRunning, domain.WorkFailed, false, false, domain.CodeWorkItemFinished},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := item(tt.state).DecideReport(ok, tt.run, at)
			if v.Item.State != tt.want || v.Changed != tt.changed || v.Resume != tt.resume {
				t.Fatalf("verdict %+v; want state %s, changed %v, resume %v", v, tt.want, tt.changed, tt.resume)
			}
			var se *domain.WorkStateError
			switch {
			case tt.code == "" && v.Err != nil:
				t.Fatalf("refused: %v", v.Err)
			case tt.code != "" && (!errors.As(v.Err, &se) || se.Code != tt.code || se.Item.State != tt.want):
				t.Fatalf("refusal %v; want a %s leaving the item %s", v.Err, tt.code, tt.want)
			}
			if v.Changed && !v.Item.UpdatedAt.Equal(at) {
				t.Errorf("changed at %v; want %v", v.Item.UpdatedAt, at)
			}
		})
	}
}

// The refusal for an ended run says why, in the response and in the
// item's own error, so that a person reading either knows.
func TestDecideReportForAnEndedRunSaysWhy(t *testing.T) {
	t.Parallel()
	w := domain.WorkItem{ID: "wi-1", RunID: "r1", State: domain.WorkActive}
	v := w.DecideReport(domain.StepOutcome{Success: true}, domain.RunCancelled, time.Now())
	var se *domain.WorkStateError
	if !errors.As(v.Err, &se) || se.RunStatus != domain.RunCancelled {
		t.Fatalf("err = %v", v.Err)
	}
	if !strings.Contains(se.Message, "run r1 has ended (cancelled)") || !strings.Contains(se.Message, "failed") {
		t.Errorf("message %q", se.Message)
	}
	if v.Item.Result == nil || v.Item.Result.Success || !strings.Contains(v.Item.Result.Error, "run r1 has ended (cancelled)") {
		t.Errorf("the item's result %+v", v.Item.Result)
	}
}
