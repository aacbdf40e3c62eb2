package views

import (
	"encoding/json"
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
	}, sps)
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
	if system := Story(domain.Run{}, []domain.Event{ev(domain.EventRunCreated, "", `{}`)}, nil); system[0].Text != "Started by the system" {
		t.Errorf("a run the system started reads %q", system[0].Text)
	}
}
