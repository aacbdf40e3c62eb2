package domain_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// decidedReview is a review of step start, decided as decision, that
// deferred an invoke of side with {"a":1}.
func decidedReview(decision string) *domain.Suspension {
	return &domain.Suspension{
		StepName: "start", Kind: domain.KindApproval, Status: domain.SuspensionResumed, ResumeStep: "next",
		Decision: decision, ResumedBy: "rita@example.com", ResumeData: json.RawMessage(`{"approved":false,"comment":"no receipt"}`),
		Deferred: []domain.Command{{Type: domain.CmdInvoke, Step: "side", Input: json.RawMessage(`{"a":1}`)}},
	}
}

// resumed is attempt 1 (of 3) of the review's resume step next, which
// returned res.
func resumed(t *testing.T, decision string, res domain.StepResult) domain.Outcome {
	o := outcome(t, res)
	o.Job.Kind, o.Step, o.Review = domain.JobResume, "next", decidedReview(decision)
	return o
}

// discarded returns the payload of c's COMMANDS_DISCARDED event, or nil.
func discarded(t *testing.T, c domain.StepCommit) map[string]any {
	t.Helper()
	for _, e := range c.Events {
		if e.Type == domain.EventCommandsDropped {
			var p map[string]any
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	return nil
}

// jobSteps lists the steps c queues, with their inputs.
func jobSteps(c domain.StepCommit) []string {
	var out []string
	for _, j := range c.Jobs {
		out = append(out, j.Step+string(j.Input))
	}
	return out
}

// Approved, a review's deferred commands run even when it has a resume
// step: they join the resume step's own commands, first.
func TestPlanApprovedReviewRunsDeferredWithResumeStep(t *testing.T) {
	t.Parallel()
	c := domain.Plan(resumed(t, domain.DecisionApproved, domain.StepResult{Output: 1, Commands: []domain.Command{domain.Invoke("side", 2)}}))
	if got, want := jobSteps(c), []string{`side{"a":1}`, "side2"}; !slices.Equal(got, want) {
		t.Fatalf("jobs %v; want %v", got, want)
	}
	if c.Jobs[0].Key == c.Jobs[1].Key {
		t.Fatalf("the deferred and the step's own invoke share job key %s", c.Jobs[0].Key)
	}
	if p := discarded(t, c); p != nil || c.Finish != nil {
		t.Fatalf("discarded %v, finish %+v", p, c.Finish)
	}
}

// Rejected, they are discarded with an event that counts them and says
// why, and the resume step's own commands run.
func TestPlanRejectedReviewDiscardsDeferredWithResumeStep(t *testing.T) {
	t.Parallel()
	c := domain.Plan(resumed(t, domain.DecisionRejected, domain.StepResult{Commands: []domain.Command{domain.Invoke("side", 2)}}))
	if got := jobSteps(c); !slices.Equal(got, []string{"side2"}) {
		t.Fatalf("jobs %v; want the resume step's own", got)
	}
	if p := discarded(t, c); p == nil || p["count"] != 1.0 || p["reason"] != "review rejected" {
		t.Fatalf("discarded %v; want 1, review rejected", p)
	}
}

// The joined result follows the usual rules: a resume step that suspends
// again discards the deferred commands with its own siblings, in one
// event; one that fails the run for good discards them too; one that
// will be retried keeps them for its next attempt.
func TestPlanDeferredFollowTheResumeStep(t *testing.T) {
	t.Parallel()
	suspends := domain.Plan(resumed(t, domain.DecisionApproved, domain.StepResult{Commands: []domain.Command{
		domain.Invoke("side", 2), domain.Suspend("more_docs", nil, ""),
	}}))
	if p := discarded(t, suspends); suspends.Suspension == nil || len(suspends.Jobs) != 0 || p == nil || p["count"] != 2.0 {
		t.Fatalf("suspending again: suspension %+v, jobs %v, discarded %v", suspends.Suspension, jobSteps(suspends), p)
	}

	o := resumed(t, domain.DecisionApproved, domain.StepResult{})
	o.Job.Attempt, o.Err = 3, errors.New("boom")
	failed := domain.Plan(o)
	if got, want := types(failed), []string{domain.EventCommandsDropped, domain.EventStepFailed, domain.EventRunFailed}; !slices.Equal(got, want) {
		t.Fatalf("failing for good: events %v; want %v", got, want)
	}
	if p := discarded(t, failed); p["reason"] != "the resume step failed" {
		t.Fatalf("failing for good: discarded %v", p)
	}

	invalid := domain.Plan(resumed(t, domain.DecisionApproved, domain.StepResult{Commands: []domain.Command{domain.Invoke("side", 2), domain.Complete(1)}}))
	if p := discarded(t, invalid); invalid.Finish == nil || invalid.Finish.Error.Code != domain.CodeOrchestration || p == nil {
		t.Fatalf("a resume step's own result that breaks the rules (invoke beside complete): finish %+v, discarded %v", invalid.Finish, p)
	}

	o = resumed(t, domain.DecisionApproved, domain.StepResult{})
	o.Err = errors.New("flaky")
	if retry := domain.Plan(o); retry.RetryAt == nil || discarded(t, retry) != nil {
		t.Fatalf("a retried attempt: retry %v, discarded %v", retry.RetryAt, discarded(t, retry))
	}
}

// Without a resume step, approval runs the deferred commands; rejection
// discards them and fails the run with the reviewer's comment.
func TestPlanDecision(t *testing.T) {
	t.Parallel()
	o := outcome(t, domain.StepResult{})
	o.Job.Kind, o.Step, o.Review = domain.JobResume, "", decidedReview(domain.DecisionApproved)
	o.Review.ResumeStep = ""
	if c := domain.PlanDecision(o); !slices.Equal(jobSteps(c), []string{`side{"a":1}`}) || c.Finish != nil || discarded(t, c) != nil {
		t.Fatalf("approved: jobs %v, finish %+v", jobSteps(c), c.Finish)
	}
	o.Review.Decision = domain.DecisionRejected
	c := domain.PlanDecision(o)
	if c.Finish == nil || c.Finish.Status != domain.RunFailed || c.Finish.Error.Code != domain.CodeRejected || c.Finish.Error.Message != "rejected by rita@example.com: no receipt" {
		t.Fatalf("rejected: finish %+v", c.Finish)
	}
	if got := types(c); !slices.Equal(got, []string{domain.EventCommandsDropped, domain.EventRunFailed}) || len(c.Jobs) != 0 || c.Step != "start" {
		t.Fatalf("rejected: events %v, jobs %v, step %q", got, jobSteps(c), c.Step)
	}
}

// deferredKinds are the commands a review may defer, one of each kind, as
// they come back from storage.
var deferredKinds = map[string]domain.Command{
	"invoke":   {Type: domain.CmdInvoke, Step: "side", Input: json.RawMessage(`{"a":1}`)},
	"complete": {Type: domain.CmdComplete, Output: json.RawMessage(`"approved output"`)},
	"fail":     {Type: domain.CmdFail, Error: &domain.RunError{Code: "approved_failure", Message: "the review's step asked"}},
}

// An approved review's resume step may end the run whatever the review
// deferred: the run ends as the step says, and the deferred command is
// discarded with an event that says why, never failing the run with an
// orchestration error (as it did once the deferred commands joined the
// resume step's own).
func TestPlanResumeStepEndsTheRun(t *testing.T) {
	t.Parallel()
	ends := map[string]struct {
		res    domain.StepResult
		status domain.RunStatus
		code   string
		output string
	}{
		"complete": {domain.StepResult{Output: "own", Commands: []domain.Command{domain.Complete("own output")}}, domain.RunSucceeded, "", `"own output"`},
		"fail":     {domain.StepResult{Commands: []domain.Command{domain.Fail("own_failure", "the resume step asked")}}, domain.RunFailed, "own_failure", ""},
	}
	for dname, d := range deferredKinds {
		for ename, end := range ends {
			t.Run("deferred "+dname+", resume step "+ename+"s", func(t *testing.T) {
				t.Parallel()
				o := resumed(t, domain.DecisionApproved, end.res)
				o.Review.Deferred = []domain.Command{d}
				c := domain.Plan(o)
				if c.Finish == nil || c.Finish.Status != end.status {
					t.Fatalf("finish %+v; want %s", c.Finish, end.status)
				}
				if end.code != "" && c.Finish.Error.Code != end.code || end.output != "" && string(c.Finish.Output) != end.output {
					t.Fatalf("finish %+v (output %s); want code %q, output %s", c.Finish, c.Finish.Output, end.code, end.output)
				}
				if len(c.Jobs) != 0 || c.Suspension != nil {
					t.Fatalf("jobs %v, suspension %+v after the run ended", jobSteps(c), c.Suspension)
				}
				if p := discarded(t, c); p == nil || p["count"] != 1.0 || p["reason"] != "the resume step ended the run" {
					t.Fatalf("discarded %v; want 1, the resume step ended the run", p)
				}
				if got := types(c); got[0] != domain.EventCommandsDropped || got[len(got)-1] != map[domain.RunStatus]string{
					domain.RunSucceeded: domain.EventRunSucceeded, domain.RunFailed: domain.EventRunFailed}[end.status] {
					t.Fatalf("events %v", got)
				}
			})
		}
	}
}

// When the deferred command ends the run and the resume step has nothing
// to add, the run ends as the deferred command says; when the resume step
// goes on with the run, it goes on, and the deferred end is discarded.
func TestPlanDeferredEndOfTheRun(t *testing.T) {
	t.Parallel()
	for _, dname := range []string{"complete", "fail"} {
		t.Run(dname, func(t *testing.T) {
			t.Parallel()
			o := resumed(t, domain.DecisionApproved, domain.StepResult{Output: "seen"})
			o.Review.Deferred = []domain.Command{deferredKinds[dname]}
			c := domain.Plan(o)
			if c.Finish == nil || discarded(t, c) != nil {
				t.Fatalf("nothing from the resume step: finish %+v, discarded %v", c.Finish, discarded(t, c))
			}
			if dname == "complete" && string(c.Finish.Output) != `"approved output"` || dname == "fail" && c.Finish.Error.Code != "approved_failure" {
				t.Fatalf("finish %+v (output %s); want the deferred command's", c.Finish, c.Finish.Output)
			}

			o = resumed(t, domain.DecisionApproved, domain.StepResult{Commands: []domain.Command{domain.Invoke("side", 2)}})
			o.Review.Deferred = []domain.Command{deferredKinds["invoke"], deferredKinds[dname]}
			c = domain.Plan(o)
			if c.Finish != nil || !slices.Equal(jobSteps(c), []string{`side{"a":1}`, "side2"}) {
				t.Fatalf("the resume step goes on: finish %+v, jobs %v", c.Finish, jobSteps(c))
			}
			if p := discarded(t, c); p == nil || p["count"] != 1.0 || p["reason"] != "the resume step went on with the run" {
				t.Fatalf("the resume step goes on: discarded %v", p)
			}
		})
	}
}
