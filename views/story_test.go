package views

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// Each kernel event reads as a sentence; the requests it names give their
// titles and decisions their comments.
func TestStoryTellsEventsInWords(t *testing.T) {
	wake := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	sps := []domain.Suspension{
		{ID: "s-1", Kind: domain.KindApproval, Reason: "awaiting_approval", Title: "Expense: Flight Lisbon",
			ResumeData: json.RawMessage(`{"approved": true, "comment": "Within policy"}`)},
		{ID: "s-2", Kind: domain.KindDelay, Reason: "cooling_off", WakeAt: &wake},
		{ID: "s-3", Kind: domain.KindInput, Reason: "awaiting_documentation"},
	}
	run := domain.Run{StartedBy: domain.Starter{ID: "u-1", Email: "ada@example.com"}}
	ev := func(typ, step, payload string) domain.Event {
		return domain.Event{Type: typ, Step: step, Payload: json.RawMessage(payload)}
	}
	got := Story(run, []domain.Event{
		ev(domain.EventRunCreated, "", `{}`),
		ev(domain.EventStepCompleted, "submit", `{}`),
		ev(domain.EventWorkflowPaused, "submit", `{"suspensionId": "s-1"}`),
		ev(domain.EventReviewApproved, "submit", `{"suspensionId": "s-1", "resumedBy": "rita@example.com"}`),
		ev(domain.EventWorkflowPaused, "wait", `{"suspensionId": "s-2"}`),
		ev(domain.EventRunResumed, "wait", `{"suspensionId": "s-2", "resumedBy": "timer"}`),
		ev(domain.EventWorkflowPaused, "ask", `{"suspensionId": "s-3"}`),
		ev(domain.EventStepRetrying, "pay", `{"attempt": 1, "error": "connection refused"}`),
		ev(domain.EventRunFailed, "pay", `{"code": "step_failed", "message": "step pay failed after 3 attempts"}`),
		ev("invoice.sent", "pay", `{"n": 1}`),
	}, sps, nil)
	want := []StoryEntry{
		{Text: "Started by ada@example.com", Tone: "info"},
		{Text: "Step “submit” completed", Tone: "good"},
		{Text: "Waiting for", Link: "/suspensions/s-1", LinkText: "Expense: Flight Lisbon", Tone: "wait"},
		{Text: "Approved by rita@example.com", Quote: "Within policy", Tone: "good"},
		{Text: "Waiting for a timer, due 2026-03-01 09:30 UTC", Tone: "wait"},
		{Text: "Resumed by the timer", Tone: "info"},
		{Text: "Waiting for", Link: "/suspensions/s-3", LinkText: "Awaiting documentation", Tone: "wait"},
		{Text: "Step “pay” failed; it will be tried again", Quote: "connection refused", Tone: "wait"},
		{Text: "The run failed", Quote: "step pay failed after 3 attempts", Tone: "bad"},
		{Text: "Step “pay” recorded “invoice.sent”"},
	}
	if len(got) != len(want) {
		t.Fatalf("story has %d entries; want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v; want %+v", i, got[i], want[i])
		}
	}
	if system := Story(domain.Run{}, []domain.Event{ev(domain.EventRunCreated, "", `{}`)}, nil, nil); system[0].Text != "Started by the system" {
		t.Errorf("a run the system started reads %q", system[0].Text)
	}
}

// A vote cast before a request's decision has its entry, by the voter's
// name, in time among the events; the vote that decided is told by the
// decision's event, also by name.
func TestStoryTellsVotesByName(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	decided := t0.Add(2 * time.Hour)
	sps := []domain.Suspension{{ID: "s-1", Kind: domain.KindApproval, Title: "Pay Acme", ResumedAt: &decided, ResumedBy: "sam@example.com",
		Votes: []domain.Vote{{Voter: "rita@example.com", Decision: domain.DecisionApproved, Comment: "Matches the order", At: t0.Add(time.Hour)},
			{Voter: "sam@example.com", Decision: domain.DecisionApproved, At: decided}}}}
	ev := func(typ, payload string, at time.Time) domain.Event {
		return domain.Event{Type: typ, Payload: json.RawMessage(payload), CreatedAt: at}
	}
	got := Story(domain.Run{}, []domain.Event{
		ev(domain.EventWorkflowPaused, `{"suspensionId": "s-1"}`, t0),
		ev(domain.EventReviewApproved, `{"suspensionId": "s-1", "resumedBy": "sam@example.com"}`, decided),
	}, sps, Names{"rita@example.com": "Rita Reviewer", "sam@example.com": "Sam Sign-off"})
	var texts []string
	for _, e := range got {
		texts = append(texts, e.Text)
	}
	want := []string{"Waiting for", "Rita Reviewer voted to approve “Pay Acme”", "Approved by Sam Sign-off"}
	if !slices.Equal(texts, want) {
		t.Errorf("story reads %q; want %q", texts, want)
	}
}
