package domain_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// signalWait is a signal wait for payment at step key, in status st.
func signalWait(key string, st domain.SuspensionStatus) *domain.Suspension {
	return &domain.Suspension{RunID: "r1", StepKey: key, Kind: domain.KindSignal, Reason: "payment", Status: st}
}

// resolvedBy is a payment wait that signal id resolved at.
func resolvedBy(key, id string, at time.Time) *domain.Suspension {
	s := signalWait(key, domain.SuspensionResumed)
	s.ResumeData = domain.MustJSON(domain.SignalData{Name: "payment", SignalID: id})
	s.ResumedAt, s.ResumedBy = &at, "billing"
	return s
}

// notTaken is a payment wait at key that was a branch of an any group
// another branch won.
func notTaken(key string) *domain.Suspension {
	s := signalWait(key, domain.SuspensionCancelled)
	s.Group, s.GroupKey, s.Branch = domain.GroupAny, "settle", "payment"
	return s
}

func TestDecideSignal(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	byName := domain.SignalRequest{RunID: "r1", Name: "payment", SignalID: "evt-2"}
	addressed := byName
	addressed.StepKey = "pay"
	early := signalWait("pay", domain.SuspensionResumed)
	early.Precompleted = true
	tests := []struct {
		name  string
		req   domain.SignalRequest
		facts domain.SignalFacts
		fate  domain.SignalFate
		code  string // of the *ConflictError refusing it
	}{
		{"a repeat answers as the first delivery", byName, domain.SignalFacts{RunStatus: domain.RunSucceeded, Earlier: &domain.Signal{SignalID: "evt-2"}}, domain.SignalRepeat, ""},
		{"by name, a pending wait takes it", byName, domain.SignalFacts{RunStatus: domain.RunSuspended, Target: signalWait("pay", domain.SuspensionPending), Resolved: resolvedBy("pay#1", "evt-1", at)}, domain.SignalDeliver, ""},
		{"by name, no wait of it ever: kept", byName, domain.SignalFacts{RunStatus: domain.RunSuspended}, domain.SignalKeep, ""},
		{"by name, its wait already resolved and none pending: lost", byName, domain.SignalFacts{RunStatus: domain.RunSuspended, Resolved: resolvedBy("pay", "evt-1", at)}, 0, domain.CodeSignalLost},
		{"by name, lost even after the run finished", byName, domain.SignalFacts{RunStatus: domain.RunSucceeded, Resolved: resolvedBy("pay", "evt-1", at)}, 0, domain.CodeSignalLost},
		{"by name, never waited for, run finished", byName, domain.SignalFacts{RunStatus: domain.RunCancelled}, 0, domain.CodeRunFinished},
		{"addressed, pending: delivered", addressed, domain.SignalFacts{RunStatus: domain.RunSuspended, Target: signalWait("pay", domain.SuspensionPending)}, domain.SignalDeliver, ""},
		{"addressed, not reached: kept", addressed, domain.SignalFacts{RunStatus: domain.RunRunning}, domain.SignalKeep, ""},
		{"addressed, resolved: lost", addressed, domain.SignalFacts{RunStatus: domain.RunSuspended, Target: resolvedBy("pay", "evt-1", at)}, 0, domain.CodeSignalLost},
		{"addressed, taken early by another: lost", addressed, domain.SignalFacts{RunStatus: domain.RunRunning, Target: early}, 0, domain.CodeSignalLost},
		{"addressed, cancelled with its run: lost", addressed, domain.SignalFacts{RunStatus: domain.RunCancelled, Target: signalWait("pay", domain.SuspensionCancelled)}, 0, domain.CodeSignalLost},
		{"addressed, a branch not taken", addressed, domain.SignalFacts{RunStatus: domain.RunSuspended, Target: notTaken("pay")}, 0, domain.CodeBranchNotTaken},
		{"by name, its last wait a branch not taken", byName, domain.SignalFacts{RunStatus: domain.RunSuspended, Resolved: notTaken("pay")}, 0, domain.CodeBranchNotTaken},
		{"by name, a branch not taken even after the run finished", byName, domain.SignalFacts{RunStatus: domain.RunSucceeded, Resolved: notTaken("pay")}, 0, domain.CodeBranchNotTaken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fate, err := domain.DecideSignal(tt.req, tt.facts)
			var ce *domain.ConflictError
			switch {
			case tt.code == "" && (err != nil || fate != tt.fate):
				t.Fatalf("fate %d, %v; want %d", fate, err, tt.fate)
			case tt.code != "" && (!errors.As(err, &ce) || ce.Code != tt.code || fate != 0):
				t.Fatalf("fate %d, %v; want a conflict %s", fate, err, tt.code)
			}
		})
	}
}

// The lost race by name names the winner and when it won, as the lost
// race at an addressed wait does.
func TestLostSignalByNameNamesTheWinner(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	req := domain.SignalRequest{RunID: "r1", Name: "payment", SignalID: "evt-2"}
	_, err := domain.DecideSignal(req, domain.SignalFacts{RunStatus: domain.RunRunning, Resolved: resolvedBy("pay", "evt-1", at)})
	var ce *domain.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
	resolved, _ := ce.Detail["resolvedAt"].(time.Time)
	if ce.Detail["winnerSignalId"] != "evt-1" || !resolved.Equal(at) || ce.Detail["stepId"] != "pay" || ce.Detail["signalId"] != "evt-2" {
		t.Errorf("detail = %v", ce.Detail)
	}
	want := "signal evt-2 lost: run r1's wait for payment (pay) was already resolved by signal evt-1 at 2030-01-02T03:04:05Z, and no other wait for it is pending; the run goes on without this delivery"
	if ce.Message != want {
		t.Errorf("message = %q\nwant      %q", ce.Message, want)
	}
}

// A signal of another name than the wait it addresses is refused as
// invalid, whatever the run's state.
func TestDecideSignalOfAnotherName(t *testing.T) {
	t.Parallel()
	req := domain.SignalRequest{RunID: "r1", Name: "refund", SignalID: "evt-1", StepKey: "pay"}
	_, err := domain.DecideSignal(req, domain.SignalFacts{RunStatus: domain.RunSuspended, Target: signalWait("pay", domain.SuspensionPending)})
	var ve *domain.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v; want a validation error", err)
	}
}
