package domain_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

func TestLadderCheck(t *testing.T) {
	t.Parallel()
	h := time.Hour.Milliseconds()
	for _, tt := range []struct {
		name  string
		rungs []domain.Rung
		kind  domain.SuspensionKind
		field string
	}{
		{"a whole ladder", []domain.Rung{{AfterMs: h, Remind: true}, {AfterMs: 2 * h, AddApprovers: &domain.Approvers{Role: domain.RoleAdmin}}, {AfterMs: 3 * h, Outcome: domain.OutcomeReject, Comment: "late"}}, domain.KindApproval, ""},
		{"an input's resume", []domain.Rung{{AfterMs: h, Outcome: domain.OutcomeResume, Data: json.RawMessage(`{"skipped":true}`)}}, domain.KindInput, ""},
		{"a rung doing nothing", []domain.Rung{{AfterMs: h}}, domain.KindApproval, "escalation/0"},
		{"a rung doing two things", []domain.Rung{{AfterMs: h, Remind: true, Outcome: domain.OutcomeApprove}}, domain.KindApproval, "escalation/0"},
		{"rungs out of order", []domain.Rung{{AfterMs: 2 * h, Remind: true}, {AfterMs: h, Remind: true}}, domain.KindApproval, "escalation/1/afterMs"},
		{"a rung at once", []domain.Rung{{AfterMs: 0, Remind: true}}, domain.KindApproval, "escalation/0/afterMs"},
		{"a rung after the outcome", []domain.Rung{{AfterMs: h, Outcome: domain.OutcomeApprove}, {AfterMs: 2 * h, Remind: true}}, domain.KindApproval, "escalation/0/outcome"},
		{"resume on an approval", []domain.Rung{{AfterMs: h, Outcome: domain.OutcomeResume}}, domain.KindApproval, "escalation/0/outcome"},
		{"approve on an input", []domain.Rung{{AfterMs: h, Outcome: domain.OutcomeApprove}}, domain.KindInput, "escalation/0/outcome"},
		{"an unknown outcome", []domain.Rung{{AfterMs: h, Outcome: "escalate"}}, domain.KindApproval, "escalation/0/outcome"},
		{"data on a rejection", []domain.Rung{{AfterMs: h, Outcome: domain.OutcomeReject, Data: json.RawMessage(`1`)}}, domain.KindApproval, "escalation/0/data"},
		{"adding nobody", []domain.Rung{{AfterMs: h, AddApprovers: &domain.Approvers{}}}, domain.KindApproval, "escalation/0/addApprovers"},
		{"adding founders", []domain.Rung{{AfterMs: h, AddApprovers: &domain.Approvers{Role: domain.RoleFounder}}}, domain.KindApproval, "escalation/0/addApprovers"},
	} {
		errs := domain.ApprovalPolicy{Escalation: tt.rungs}.Check(tt.kind)
		if tt.field == "" && len(errs) > 0 || tt.field != "" && (len(errs) != 1 || errs[0].Field != tt.field) {
			t.Errorf("%s: %+v; want %q", tt.name, errs, tt.field)
		}
	}
}

func TestDecideEscalation(t *testing.T) {
	t.Parallel()
	asked := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	h := time.Hour.Milliseconds()
	ladder := domain.ApprovalPolicy{Escalation: []domain.Rung{
		{AfterMs: h, Remind: true},
		{AfterMs: 2 * h, AddApprovers: &domain.Approvers{Role: domain.RoleAdmin, Emails: []string{"Boss@X.test"}}},
		{AfterMs: 3 * h, Outcome: domain.OutcomeApprove, Comment: "approved by default"},
	}}
	s := domain.Suspension{ID: "s1", RunID: "r1", StepName: "sign-off", Kind: domain.KindApproval, Status: domain.SuspensionPending,
		SuspendedAt: asked, Policy: ladder, ApproverRole: domain.RoleAdmin, Approvers: []string{"ann@x.test"}}
	req := func(rung int) domain.EscalateRequest {
		return domain.EscalateRequest{RunID: "r1", SuspensionID: "s1", Rung: rung, Now: asked.Add(time.Duration(rung+1) * time.Hour)}
	}

	e := domain.DecideEscalation(req(0), s)
	if !e.Fire || !e.Rung.Remind || e.Next == nil || e.Next.Key != domain.EscalateJobKey("s1", 1) || !e.Next.RunAt.Equal(asked.Add(2*time.Hour)) ||
		e.Event.Type != domain.EventRequestEscalated || e.Audit == nil || e.Audit.ActorEmail != domain.EscalatedBy {
		t.Fatalf("the first rung = %+v; want a reminder that queues the second, logged and audited", e)
	}
	if again := domain.DecideEscalation(req(0), domain.Suspension(func() domain.Suspension { c := s; c.Escalated = 1; return c }())); again.Fire {
		t.Fatalf("a rung fired twice: %+v", again)
	}
	s.Escalated = 1
	e = domain.DecideEscalation(req(1), s)
	if !e.Fire || !slices.Equal(e.Approvers, []string{"ann@x.test", "boss@x.test"}) || e.ApproverRole != domain.RoleAdmin {
		t.Fatalf("addApprovers = %+v; want the boss added beside Ann, admins kept", e)
	}
	s.Escalated = 2
	e = domain.DecideEscalation(req(2), s)
	if !e.Fire || e.Resume == nil || !e.Resume.System || e.Resume.Decision != domain.DecisionApproved || e.Resume.By != domain.EscalatedBy || e.Next != nil {
		t.Fatalf("the outcome = %+v (resume %+v); want the system's approval and no rung after it", e, e.Resume)
	}
	var d domain.ApprovalData
	if err := json.Unmarshal(e.Resume.Data, &d); err != nil || !d.Approved || d.Comment != "approved by default" {
		t.Fatalf("the outcome's data = %s", e.Resume.Data)
	}
	for _, status := range []domain.SuspensionStatus{domain.SuspensionResumed, domain.SuspensionCancelled} {
		done := s
		done.Status = status
		if e := domain.DecideEscalation(req(2), done); e.Fire {
			t.Fatalf("a rung fired on a %s request", status)
		}
	}
}

// An outcome that comes before its time, because nobody may decide its
// request, says so instead of its own comment; one whose request has
// found a decider since it was brought forward waits for its time again.
func TestEarlyOutcome(t *testing.T) {
	t.Parallel()
	asked := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	s := domain.Suspension{ID: "s1", RunID: "r1", Kind: domain.KindApproval, Status: domain.SuspensionPending, SuspendedAt: asked, Escalated: 1,
		Policy: domain.ApprovalPolicy{Quorum: 2, Escalation: []domain.Rung{
			{AfterMs: time.Hour.Milliseconds(), Remind: true},
			{AfterMs: 72 * time.Hour.Milliseconds(), Outcome: domain.OutcomeReject, Comment: "No decision within 3 days"}}}}
	early := domain.EscalateRequest{RunID: "r1", SuspensionID: "s1", Rung: 1, Now: asked.Add(time.Hour)}
	e := domain.DecideEscalation(early, s)
	var d domain.ApprovalData
	if !e.Fire || e.Resume == nil || json.Unmarshal(e.Resume.Data, &d) != nil || d.Comment != "Nobody who may decide is left: 2 approvals needed, 0 may decide" {
		t.Fatalf("the early outcome = %+v, comment %q; want it to say nobody may decide", e, d.Comment)
	}
	early.Deciders = 1
	if e := domain.DecideEscalation(early, s); e.Fire || e.Next == nil || !e.Next.RunAt.Equal(asked.Add(72*time.Hour)) {
		t.Fatalf("the early outcome with a decider = %+v; want it not to fire, queued again for its own time", e)
	}
	onTime := domain.EscalateRequest{RunID: "r1", SuspensionID: "s1", Rung: 1, Now: asked.Add(72 * time.Hour)}
	if e := domain.DecideEscalation(onTime, s); !e.Fire || json.Unmarshal(e.Resume.Data, &d) != nil || d.Comment != "No decision within 3 days" {
		t.Fatalf("the outcome on time says %q; want its own comment", d.Comment)
	}
}

// A request open to all staff stays open to them when a rung adds people.
func TestAddApproversNeverNarrows(t *testing.T) {
	t.Parallel()
	s := domain.Suspension{ID: "s1", Kind: domain.KindApproval, Status: domain.SuspensionPending,
		Policy: domain.ApprovalPolicy{Escalation: []domain.Rung{{AfterMs: 1, AddApprovers: &domain.Approvers{Role: domain.RoleAdmin, Emails: []string{"cfo@x.test"}}}}}}
	e := domain.DecideEscalation(domain.EscalateRequest{SuspensionID: "s1"}, s)
	after := s
	after.Approvers, after.ApproverRole = e.Approvers, e.ApproverRole
	for _, u := range []domain.User{{Email: "rev@x.test", Role: domain.RoleReviewer}, {Email: "adm@x.test", Role: domain.RoleAdmin}, {Email: "cfo@x.test", Role: domain.RoleFounder}} {
		if !after.MayDecide(u) {
			t.Errorf("%s (%s) may no longer decide: approvers %v, role %q", u.Email, u.Role, after.Approvers, after.ApproverRole)
		}
	}
}

func TestNextEscalation(t *testing.T) {
	t.Parallel()
	asked := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	day := 24 * time.Hour.Milliseconds()
	s := domain.Suspension{Status: domain.SuspensionPending, SuspendedAt: asked, Policy: domain.ApprovalPolicy{Escalation: []domain.Rung{
		{AfterMs: day, Remind: true},
		{AfterMs: 3 * day, AddApprovers: &domain.Approvers{Role: domain.RoleAdmin}},
		{AfterMs: 4 * day, Outcome: domain.OutcomeReject},
	}}}
	for _, tt := range []struct {
		fired int
		now   time.Time
		want  string
	}{
		{0, asked, "Reminder in 1 day"},
		{1, asked.Add(24 * time.Hour), "Escalates to admins in 2 days"},
		{2, asked.Add(95 * time.Hour), "Rejected automatically in 1 hour"},
		{2, asked.Add(97 * time.Hour), "Rejected automatically now"},
		{3, asked, ""},
	} {
		s.Escalated = tt.fired
		if got := domain.NextEscalation(s, tt.now); got != tt.want {
			t.Errorf("after %d rungs at %v: %q; want %q", tt.fired, tt.now.Sub(asked), got, tt.want)
		}
	}
}

// A rung that adds a role asks its people by name: they are mailed at
// once, also when the request was for another role.
func TestEscalationToARoleMailsIt(t *testing.T) {
	t.Parallel()
	s := domain.Suspension{Kind: domain.KindApproval, Status: domain.SuspensionPending, ApproverRole: domain.RoleReviewer,
		Policy: domain.ApprovalPolicy{Escalation: []domain.Rung{{AfterMs: 1, AddApprovers: &domain.Approvers{Role: domain.RoleAdmin}}}}}
	users := []domain.User{{ID: "a", Email: "a@x.test", Role: domain.RoleAdmin}, {ID: "r", Email: "r@x.test", Role: domain.RoleReviewer}}
	if got := domain.MailRecipients(s, users); len(got) != 1 || got[0].User.ID != "r" {
		t.Fatalf("before the rung: %+v; want the reviewers", got)
	}
	s.Escalated = 1
	if got := domain.MailRecipients(s, users); len(got) != 1 || got[0].User.ID != "a" || !got[0].Personal {
		t.Fatalf("after the rung: %+v; want the admins, asked by name", got)
	}
}
