package storage_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// expensePresentation has values a round trip through a JSON column would
// change if it were not kept as written: a number with trailing zeros, an
// object whose keys are not in order, text with characters JSON encoders
// escape.
var expensePresentation = domain.Presentation{
	Title: "Expense: Flight Lisbon — €389.00",
	Fields: []domain.Field{
		{Label: "Amount", Value: json.RawMessage(`389.00`), Format: "money:EUR"},
		{Label: "Requester", Value: json.RawMessage(`"rita@example.com"`), Format: domain.FormatEmail},
		{Label: "Submitted", Value: json.RawMessage(`"2026-04-15"`), Format: domain.FormatDate},
		{Label: "Trip", Value: json.RawMessage(`{"to":"LIS","from":"BER","legs":[2,1]}`)},
		{Label: "Note", Value: json.RawMessage(`"<b>é</b> & \u2028"`), Format: domain.FormatText},
	},
	ReasonLabel: "Expense approval",
}

// checkPresentation fails the test unless s shows p: the title, the
// fields in order with their values byte for byte, and the reason label.
func checkPresentation(t *testing.T, s domain.Suspension, p domain.Presentation) {
	t.Helper()
	if s.Title != p.Title || s.ReasonLabel != p.ReasonLabel || s.ReasonName() != p.ReasonLabel {
		t.Errorf("suspension %s: title %q, reason label %q; want %q, %q", s.ID, s.Title, s.ReasonLabel, p.Title, p.ReasonLabel)
	}
	if len(s.Fields) != len(p.Fields) {
		t.Fatalf("suspension %s has %d fields; want %d: %+v", s.ID, len(s.Fields), len(p.Fields), s.Fields)
	}
	for i, f := range s.Fields {
		w := p.Fields[i]
		if f.Label != w.Label || string(f.Value) != string(w.Value) || f.Format != w.Format {
			t.Errorf("field %d = {%s %s %s}; want {%s %s %s}", i, f.Label, f.Value, f.Format, w.Label, w.Value, w.Format)
		}
	}
}

// A suspension's presentation, set by a Go step on a suspend or a review
// command, is stored with it and read back as it was given, by id and in
// lists; a suspension without one has no fields and a reason name made
// from its reason.
func TestPresentationIsStored(t *testing.T) {
	t.Parallel()
	docs := domain.Presentation{Title: "Documents for claim c-1", ReasonLabel: "Documents needed",
		Fields: []domain.Field{domain.NewField("Claim", "Revenue grew 40%", domain.FormatText)}}
	asked := askOnce("asked", func(domain.StepRequest) domain.Command {
		return domain.Suspend("awaiting_documentation", map[string]string{"claimId": "c-1"}, "ask",
			domain.WithTitle("Upload your statement", "A PDF of last year's accounts"), domain.WithPresentation(docs))
	})
	reviewed := domain.NewWorkflow("reviewed", "1").
		Step("submit", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{
				domain.Review("awaiting_approval", map[string]int{"amount": 389}, domain.WithPresentation(expensePresentation)),
				domain.Invoke("pay", nil),
			}}, nil
		}).
		Step("pay", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Output: "paid"}, nil
		})
	plain := askOnce("plain", func(domain.StepRequest) domain.Command {
		return domain.Review("awaiting_approval", nil)
	})
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		e := startEngine(t, db, newRegistry(t, asked, reviewed, plain), engine.Opts{})
		for _, tc := range []struct {
			workflow string
			want     domain.Presentation
		}{
			{"asked", docs},
			{"reviewed", expensePresentation},
			{"plain", domain.Presentation{ReasonLabel: "Awaiting approval"}},
		} {
			run := startRun(t, e, tc.workflow, nil)
			waitRun(t, db, run.ID, domain.RunSuspended)
			listed := pendingSuspension(t, db, run.ID)
			byID, err := db.Suspension(t.Context(), listed.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []domain.Suspension{listed, byID} {
				if tc.workflow == "plain" {
					if s.Title != "" || s.Fields != nil || s.ReasonLabel != "" || s.ReasonName() != "Awaiting approval" {
						t.Errorf("plain: %+v; want no presentation, reason name %q", s, s.ReasonName())
					}
					continue
				}
				checkPresentation(t, s, tc.want)
			}
			if tc.workflow == "asked" && byID.Instructions != "A PDF of last year's accounts" {
				t.Errorf("instructions %q", byID.Instructions)
			}
		}
	})
}

// A resume that arrives before its pause is kept; when the pause commits
// it attaches to the kept row, which then carries the pause's
// presentation like any other suspension.
func TestPresentationOnAResumeKeptBeforeItsPause(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		entered, release := make(chan string, 1), make(chan struct{})
		wf := askOnce("held", func(req domain.StepRequest) domain.Command {
			entered <- req.RunID
			<-release
			return domain.Suspend("awaiting_approval", map[string]int{"amount": 389}, "ask", domain.WithPresentation(expensePresentation))
		})
		e := startEngine(t, db, newRegistry(t, wf), engine.Opts{})
		run := startRun(t, e, "held", nil)
		<-entered
		early, err := e.Resume(t.Context(), domain.ResumeRequest{RunID: run.ID, StepKey: "ask", Data: raw(map[string]bool{"ok": true}), By: "early-bird"})
		close(release)
		if err != nil || !early.Precompleted {
			t.Fatalf("early resume: %+v, %v", early, err)
		}
		waitRun(t, db, run.ID, domain.RunSucceeded)
		s, err := db.Suspension(t.Context(), early.ID)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != domain.SuspensionResumed || s.Precompleted || s.ResumedBy != "early-bird" {
			t.Fatalf("suspension %+v; want the early resume, attached", s)
		}
		checkPresentation(t, s, expensePresentation)
	})
}
