package storage_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// A suspension that names its approvers keeps them (in lower case) and its
// role; a person it names finds it among their own, matched as a whole
// email and never as a LIKE pattern; its assignee, not named, does not; and
// the engine refuses a resume by anyone else, changing nothing.
func TestApproversAreKeptListedAndEnforced(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		wf := askOnce("named", func(domain.StepRequest) domain.Command {
			return domain.Suspend("sign", map[string]any{}, "", domain.WithApprovers(domain.RoleReviewer, "Ann_Lee@Example.com", "bo@example.com", "bo@example.com"), domain.WithAssignee("cy@example.com"))
		})
		e := startEngine(t, db, newRegistry(t, wf), engine.Opts{})
		run := startRun(t, e, "named", nil)
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)
		if !slices.Equal(s.Approvers, []string{"ann_lee@example.com", "bo@example.com"}) || s.ApproverRole != domain.RoleReviewer || !s.Restricted() {
			t.Fatalf("stored: approvers %q, role %q", s.Approvers, s.ApproverRole)
		}
		for email, want := range map[string]int{"ANN_LEE@example.com": 1, "bo@example.com": 1, "annXlee@example.com": 0, "o@example.com": 0, "%": 0, "cy@example.com": 0} {
			ss, _, err := db.Suspensions(ctx, domain.SuspensionFilter{RunID: run.ID, Assignee: email})
			if err != nil || len(ss) != want {
				t.Errorf("the list of %s has %d (%v); want %d", email, len(ss), err, want)
			}
		}
		founder := domain.User{Email: "cy@example.com", Role: domain.RoleFounder}
		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw("x"), By: founder.Email, Actor: &founder}); !errors.Is(err, domain.ErrNotApprover) {
			t.Fatalf("a founder assigned but not named: %v; want ErrNotApprover", err)
		}
		if got := pendingSuspension(t, db, run.ID); got.ResumedAt != nil {
			t.Fatalf("a refused resume changed the suspension: %+v", got)
		}
		named := domain.User{Email: "Bo@Example.com", Role: domain.RoleFounder}
		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw("ok"), By: named.Email, Actor: &named}); err != nil {
			t.Fatalf("a founder it names: %v", err)
		}
		var out struct{ ResumeData, ResumedBy string }
		if done := waitRun(t, db, run.ID, domain.RunSucceeded); json.Unmarshal(done.Output, &out) != nil || out.ResumeData != "ok" || out.ResumedBy != named.Email {
			t.Errorf("output %s", done.Output)
		}
	})
}
