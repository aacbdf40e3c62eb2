package domain_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

func TestDecideResume(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	req := domain.ResumeRequest{RunID: "r1", StepKey: "approve", Data: json.RawMessage(`{"ok":true,"n":1}`), By: "api",
		RequestKey: "key-1", Decision: domain.DecisionApproved}
	pending := &domain.Suspension{ID: "s1", RunID: "r1", StepKey: "approve", Status: domain.SuspensionPending}
	won := func(change func(*domain.Suspension)) *domain.Suspension {
		s := &domain.Suspension{ID: "s1", RunID: "r1", StepKey: "approve", Status: domain.SuspensionResumed, ResumedAt: &at,
			ResumedBy: "api", ResumeRequestKey: "key-1", Decision: domain.DecisionApproved,
			ResumeData: json.RawMessage(`{"n": 1, "ok": true}`)} // as jsonb gives it back
		if change != nil {
			change(s)
		}
		return s
	}
	noKey := req
	noKey.RequestKey = ""
	tests := []struct {
		name  string
		req   domain.ResumeRequest
		facts domain.ResumeFacts
		fate  domain.ResumeFate
		code  string // of the *ConflictError refusing it
	}{
		{"a pending suspension is resumed", req, domain.ResumeFacts{RunStatus: domain.RunSuspended, Target: pending}, domain.ResumeApply, ""},
		{"before its pause commits, the resume is kept", req, domain.ResumeFacts{RunStatus: domain.RunRunning}, domain.ResumeKeep, ""},
		{"a finished run keeps nothing", req, domain.ResumeFacts{RunStatus: domain.RunSucceeded}, 0, domain.CodeRunFinished},
		{"the winning request again gets its answer", req, domain.ResumeFacts{RunStatus: domain.RunRunning, Target: won(nil)}, domain.ResumeRepeat, ""},
		{"a repeat after the run finished still gets it", req, domain.ResumeFacts{RunStatus: domain.RunSucceeded, Target: won(nil)}, domain.ResumeRepeat, ""},
		{"without a key there is no repeat", noKey, domain.ResumeFacts{RunStatus: domain.RunRunning, Target: won(func(s *domain.Suspension) { s.ResumeRequestKey = "" })}, 0, domain.CodeAlreadyResumed},
		{"another key loses", req, domain.ResumeFacts{RunStatus: domain.RunRunning, Target: won(func(s *domain.Suspension) { s.ResumeRequestKey = "key-0" })}, 0, domain.CodeAlreadyResumed},
		{"the same key with other data loses", req, domain.ResumeFacts{RunStatus: domain.RunRunning, Target: won(func(s *domain.Suspension) { s.ResumeData = json.RawMessage(`{"ok":false,"n":1}`) })}, 0, domain.CodeAlreadyResumed},
		{"the same key by another resumer loses", req, domain.ResumeFacts{RunStatus: domain.RunRunning, Target: won(func(s *domain.Suspension) { s.ResumedBy = "web" })}, 0, domain.CodeAlreadyResumed},
		{"the same key with the other decision loses", req, domain.ResumeFacts{RunStatus: domain.RunRunning, Target: won(func(s *domain.Suspension) { s.Decision = domain.DecisionRejected })}, 0, domain.CodeAlreadyResumed},
		{"the request kept for its pause, sent again, gets its answer", req, domain.ResumeFacts{RunStatus: domain.RunRunning, Target: won(func(s *domain.Suspension) { s.Precompleted = true })}, domain.ResumeRepeat, ""},
		{"another key loses to a resume kept for the pause", req, domain.ResumeFacts{RunStatus: domain.RunRunning, Target: won(func(s *domain.Suspension) { s.Precompleted, s.ResumeRequestKey = true, "key-0" })}, 0, domain.CodeAlreadyResumed},
		{"the same key with other data loses to a resume kept for the pause", req, domain.ResumeFacts{RunStatus: domain.RunRunning, Target: won(func(s *domain.Suspension) { s.Precompleted, s.ResumeData = true, json.RawMessage(`{"ok":false,"n":1}`) })}, 0, domain.CodeAlreadyResumed},
		{"an expired suspension", req, domain.ResumeFacts{RunStatus: domain.RunRunning, Target: won(func(s *domain.Suspension) { s.Status = domain.SuspensionExpired })}, 0, domain.CodeNotPending},
		{"a cancelled suspension", req, domain.ResumeFacts{RunStatus: domain.RunCancelled, Target: won(func(s *domain.Suspension) { s.Status = domain.SuspensionCancelled })}, 0, domain.CodeNotPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fate, err := domain.DecideResume(tt.req, tt.facts)
			if tt.code == "" {
				if err != nil || fate != tt.fate {
					t.Fatalf("DecideResume = %v, %v; want %v", fate, err, tt.fate)
				}
				return
			}
			var ce *domain.ConflictError
			if !errors.As(err, &ce) || ce.Code != tt.code {
				t.Fatalf("DecideResume = %v, %v; want a conflict %s", fate, err, tt.code)
			}
		})
	}
}

// The request's check vets a resume about to be applied, and only that.
func TestDecideResumeChecksOnlyWhatItApplies(t *testing.T) {
	t.Parallel()
	refused := errors.New("not an approver")
	calls := 0
	req := domain.ResumeRequest{RunID: "r1", StepKey: "approve", By: "web", Check: func(domain.Suspension) error { calls++; return refused }}
	if _, err := domain.DecideResume(req, domain.ResumeFacts{RunStatus: domain.RunSuspended, Target: &domain.Suspension{Status: domain.SuspensionPending}}); !errors.Is(err, refused) {
		t.Fatalf("a refused check gave %v", err)
	}
	for _, f := range []domain.ResumeFacts{
		{RunStatus: domain.RunRunning},
		{RunStatus: domain.RunRunning, Target: &domain.Suspension{Status: domain.SuspensionResumed, ResumedBy: "api"}},
	} {
		if _, err := domain.DecideResume(req, f); errors.Is(err, refused) {
			t.Fatalf("the check ran for %+v", f)
		}
	}
	if calls != 1 {
		t.Fatalf("the check ran %d times; want once", calls)
	}
}

// A timer wakes a pause still pending once its wake time has come, and
// nothing else: not before, not a pause someone resumed (or that expired
// or was cancelled) first, not a resume kept for a pause still to come.
func TestDecideWake(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) *time.Time { w := now.Add(d); return &w }
	tests := []struct {
		name string
		s    domain.Suspension
		want bool
	}{
		{"due", domain.Suspension{Status: domain.SuspensionPending, WakeAt: at(-time.Second)}, true},
		{"due this instant", domain.Suspension{Status: domain.SuspensionPending, WakeAt: at(0)}, true},
		{"not due yet", domain.Suspension{Status: domain.SuspensionPending, WakeAt: at(time.Millisecond)}, false},
		{"no timer", domain.Suspension{Status: domain.SuspensionPending}, false},
		{"resumed already", domain.Suspension{Status: domain.SuspensionResumed, ResumedBy: "api", WakeAt: at(-time.Second)}, false},
		{"expired", domain.Suspension{Status: domain.SuspensionExpired, WakeAt: at(-time.Second)}, false},
		{"cancelled", domain.Suspension{Status: domain.SuspensionCancelled, WakeAt: at(-time.Second)}, false},
		{"pre-completed", domain.Suspension{Status: domain.SuspensionPending, Precompleted: true, WakeAt: at(-time.Second)}, false},
		{"pre-completed and resumed", domain.Suspension{Status: domain.SuspensionResumed, Precompleted: true, WakeAt: at(-time.Second)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := domain.DecideWake(tt.s, now); got != tt.want {
				t.Fatalf("DecideWake = %v; want %v", got, tt.want)
			}
		})
	}
}
