package enginetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/domain/engine"
)

// escalationTests are the rules of a deadline ladder: its rungs fire once
// each, in order, by the engine's clock and across restarts; a decision
// before a rung ends the ladder; a rung and a vote never both decide.
var escalationTests = []test{
	{"LadderFiresInOrderOnce", testLadderFiresInOrderOnce},
	{"DecisionEndsTheLadder", testDecisionEndsTheLadder},
	{"RungRacesVote", testRungRacesVote},
	{"UndecidableEscalatesAtOnce", testUndecidableEscalatesAtOnce},
	{"NobodyLeftDecidesSayingSo", testNobodyLeftDecidesSayingSo},
}

var ladderStart = time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)

// addDeciders gives the store the people who decide the suite's
// requests, an admin and two reviewers, and the founders named.
func addDeciders(t testing.TB, db Store, founders ...string) {
	t.Helper()
	people := map[string]domain.Role{"admin@x.test": domain.RoleAdmin, "ann@x.test": domain.RoleReviewer, "bob@x.test": domain.RoleReviewer}
	for _, f := range founders {
		people[f] = domain.RoleFounder
	}
	for email, role := range people {
		if _, err := db.CreateUser(t.Context(), domain.User{ID: newID(), Email: email, Role: role}, "not a password"); err != nil {
			t.Fatal(err)
		}
	}
}

// rungsFired waits until suspension id has fired n rungs.
func rungsFired(t *testing.T, db Store, id string, n int) domain.Suspension {
	t.Helper()
	var s domain.Suspension
	waitFor(t, 10*time.Second, fmt.Sprintf("rung %d of the ladder", n), func() bool {
		var err error
		s, err = db.Suspension(t.Context(), id)
		return err == nil && s.Escalated >= n
	})
	if s.Escalated != n {
		t.Fatalf("%d rungs fired; want %d", s.Escalated, n)
	}
	return s
}

// escalateJobs are the run's queued rung jobs.
func escalateJobs(t *testing.T, db Store, runID string) []JobState {
	t.Helper()
	return slices.DeleteFunc(runJobs(t, db, runID), func(j JobState) bool { return j.Kind != domain.JobEscalate })
}

// A ladder of a reminder after an hour, more approvers after two and a
// rejection after three fires each rung when the engine's clock passes it,
// in order, once, with the next rung's timer queued by the one before; an
// engine that stops between rungs leaves them to the next. The rejection
// decides in the system's name, and the step receives it.
func testLadderFiresInOrderOnce(t *testing.T, open Open) {
	db := open(t)
	addDeciders(t, db)
	clock := clocktest.New(ladderStart)
	var n stepCounter
	policy := domain.ApprovalPolicy{Escalation: []domain.Rung{
		{AfterMs: time.Hour.Milliseconds(), Remind: true},
		{AfterMs: 2 * time.Hour.Milliseconds(), AddApprovers: &domain.Approvers{Emails: []string{"Boss@X.test"}}},
		{AfterMs: 3 * time.Hour.Milliseconds(), Outcome: domain.OutcomeReject, Comment: "No decision within 3 hours"},
	}}
	reg := newRegistry(t, approvalWorkflow("ladder", policy, &n))
	e, stop := runEngine(t, db, reg, engine.Opts{Clock: clock})
	run := startRun(t, e, "ladder", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	s := pendingSuspension(t, db, run.ID)
	if jobs := escalateJobs(t, db, run.ID); len(jobs) != 1 || !jobs[0].RunAt.Equal(ladderStart.Add(time.Hour)) {
		t.Fatalf("rung jobs %+v; want the first rung's, due in an hour", jobs)
	}

	clock.Set(ladderStart.Add(time.Hour + time.Second))
	rungsFired(t, db, s.ID, 1)
	if jobs := escalateJobs(t, db, run.ID); len(jobs) != 1 || !jobs[0].RunAt.Equal(ladderStart.Add(2*time.Hour)) {
		t.Fatalf("after the reminder, rung jobs %+v; want the second rung's", jobs)
	}
	// The engine stops between rungs; another takes over the queue.
	stop()
	startEngine(t, db, reg, engine.Opts{Clock: clock})
	clock.Set(ladderStart.Add(2*time.Hour + time.Second))
	got := rungsFired(t, db, s.ID, 2)
	if !slices.Contains(got.Approvers, "boss@x.test") || got.ApproverRole != domain.RoleReviewer || got.Status != domain.SuspensionPending {
		t.Fatalf("after addApprovers: %+v; want the boss added to all staff, still pending", got)
	}
	clock.Set(ladderStart.Add(3*time.Hour + time.Second))
	done := waitRun(t, db, run.ID, domain.RunSucceeded)
	var in domain.ResumePayload
	var d domain.ApprovalData
	if err := json.Unmarshal(done.Output, &in); err != nil || json.Unmarshal(in.ResumeData, &d) != nil || d.Approved || d.Comment != "No decision within 3 hours" || in.ResumedBy != domain.EscalatedBy {
		t.Fatalf("the step received %s; want the rejection by %s with its comment", done.Output, domain.EscalatedBy)
	}
	clock.Set(ladderStart.Add(30 * time.Hour))
	noJobsLeft(t, db, run.ID)
	if types := eventTypes(t, db, run.ID); countOf(types, domain.EventRequestEscalated) != 3 {
		t.Fatalf("events %v; want three rungs", types)
	}
	if final, _ := db.Suspension(t.Context(), s.ID); final.Escalated != 3 || final.Decision != domain.DecisionRejected || final.ResumedBy != domain.EscalatedBy {
		t.Fatalf("suspension %+v; want decided by the last rung, three rungs fired", final)
	}
	entries, _, err := db.Audit(t.Context(), domain.AuditFilter{Action: "suspension.escalated"})
	if err != nil || len(entries) != 3 {
		t.Fatalf("audit %+v, %v; want one entry a rung", entries, err)
	}
	if n.Get("decided") != 1 {
		t.Fatalf("the decided step ran %d times", n.Get("decided"))
	}
}

// A decision before a rung is due ends the ladder: the next rung's job
// goes with the decision, and no rung fires after it, whatever the clock
// does.
func testDecisionEndsTheLadder(t *testing.T, open Open) {
	db := open(t)
	addDeciders(t, db)
	clock := clocktest.New(ladderStart)
	var n stepCounter
	policy := domain.ApprovalPolicy{Escalation: []domain.Rung{
		{AfterMs: time.Hour.Milliseconds(), Remind: true},
		{AfterMs: 2 * time.Hour.Milliseconds(), Outcome: domain.OutcomeApprove},
	}}
	store := &claimCounter{Store: db}
	e := startEngine(t, store, newRegistry(t, approvalWorkflow("decided", policy, &n)), engine.Opts{Clock: clock})
	run := startRun(t, e, "decided", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	s := pendingSuspension(t, db, run.ID)
	clock.Set(ladderStart.Add(30 * time.Minute))
	if _, err := vote(t.Context(), e, s.ID, "ann@x.test", false, ""); err != nil {
		t.Fatal(err)
	}
	if jobs := escalateJobs(t, db, run.ID); len(jobs) != 0 {
		t.Fatalf("after the decision, rung jobs %+v are left", jobs)
	}
	waitRun(t, db, run.ID, domain.RunSucceeded)
	clock.Set(ladderStart.Add(5 * time.Hour))
	store.waitClaims(t, 2)
	noJobsLeft(t, db, run.ID)
	if got, _ := db.Suspension(t.Context(), s.ID); got.Escalated != 0 || got.ResumedBy != "ann@x.test" || got.Decision != domain.DecisionRejected {
		t.Fatalf("suspension %+v; want Ann's rejection and no rung fired", got)
	}
	if types := eventTypes(t, db, run.ID); countOf(types, domain.EventRequestEscalated) != 0 {
		t.Fatalf("events %v; want no rung", types)
	}
}

// A hundred approvals whose ladder approves when due, each voted against
// by a person at the instant the rung comes due: each ends with exactly
// one outcome, the rung's or the person's, and the person hears whether
// theirs counted.
func testRungRacesVote(t *testing.T, open Open) {
	db := open(t)
	addDeciders(t, db)
	clock := clocktest.New(ladderStart)
	var n stepCounter
	policy := domain.ApprovalPolicy{Escalation: []domain.Rung{{AfterMs: time.Hour.Milliseconds(), Outcome: domain.OutcomeApprove}}}
	e := startEngine(t, db, newRegistry(t, approvalWorkflow("race", policy, &n)), engine.Opts{Clock: clock, Workers: 16, PollInterval: time.Millisecond})
	const runs = 100
	ids := make([]string, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() { ids[i] = startRun(t, e, "race", i).ID })
	}
	wg.Wait()
	pending := make([]domain.Suspension, runs)
	for i, id := range ids {
		waitRun(t, db, id, domain.RunSuspended)
		pending[i] = pendingSuspension(t, db, id)
	}
	errs := make([]error, runs)
	clock.Set(ladderStart.Add(time.Hour))
	for i := range runs {
		wg.Go(func() {
			// Spread over the time the engine takes to claim the rungs,
			// so that some votes come before, some during, some after.
			time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
			_, errs[i] = vote(t.Context(), e, pending[i].ID, "ann@x.test", false, "")
		})
	}
	wg.Wait()
	rungWon := 0
	for i, id := range ids {
		waitRun(t, db, id, domain.RunSucceeded)
		s, err := db.Suspension(t.Context(), pending[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		var ce *domain.ConflictError
		switch {
		case errs[i] == nil && s.ResumedBy == "ann@x.test" && s.Decision == domain.DecisionRejected && s.Escalated == 0:
		case errors.As(errs[i], &ce) && ce.Code == domain.CodeAlreadyResumed && s.ResumedBy == domain.EscalatedBy && s.Decision == domain.DecisionApproved:
			rungWon++
		default:
			t.Fatalf("run %d: the vote got %v and the request is %+v; want exactly one outcome, told to the voter", i, errs[i], s)
		}
	}
	if n.Get("decided") != runs {
		t.Fatalf("the decided step ran %d times for %d runs", n.Get("decided"), runs)
	}
	t.Logf("%d of %d races won by the rung", rungWon, runs)
}

// A request that too few people may decide widens at once, but its
// ladder never climbs every rung at once: with three who may and a quorum
// of five, the reminder keeps its time; once it fired, the rung that widens
// comes due at once, and the last rung, five now able to decide, waits for
// its own time. The run's log says each time why.
func testUndecidableEscalatesAtOnce(t *testing.T, open Open) {
	db := open(t)
	addDeciders(t, db, "cy@x.test", "dee@x.test")
	clock := clocktest.New(ladderStart)
	var n stepCounter
	policy := domain.ApprovalPolicy{Quorum: 5, Escalation: []domain.Rung{
		{AfterMs: 24 * time.Hour.Milliseconds(), Remind: true},
		{AfterMs: 48 * time.Hour.Milliseconds(), AddApprovers: &domain.Approvers{Emails: []string{"cy@x.test", "dee@x.test"}}},
		{AfterMs: 72 * time.Hour.Milliseconds(), Outcome: domain.OutcomeReject, Comment: "No decision within 3 days"},
	}}
	e := startEngine(t, db, newRegistry(t, approvalWorkflow("short", policy, &n)), engine.Opts{Clock: clock, PollInterval: time.Millisecond})
	run := startRun(t, e, "short", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	id := pendingSuspension(t, db, run.ID).ID
	if jobs := escalateJobs(t, db, run.ID); len(jobs) != 1 || !jobs[0].RunAt.Equal(ladderStart.Add(24*time.Hour)) {
		t.Fatalf("rung jobs %+v; want the reminder's, at its own time", jobs)
	}
	clock.Set(ladderStart.Add(24*time.Hour + time.Second))
	s := rungsFired(t, db, id, 2)
	if s.Status != domain.SuspensionPending || !slices.Contains(s.Approvers, "dee@x.test") {
		t.Fatalf("request %+v; want it pending, widened to cy and dee", s)
	}
	waitFor(t, 10*time.Second, "the last rung's job", func() bool { return len(escalateJobs(t, db, run.ID)) == 1 })
	if jobs := escalateJobs(t, db, run.ID); !jobs[0].RunAt.Equal(ladderStart.Add(72 * time.Hour)) {
		t.Fatalf("the last rung is due %v; want its own time, now that five may decide", jobs[0].RunAt)
	}
	if got := undecidableCounts(t, db, run.ID, 5); !slices.Equal(got, []int{3, 3}) {
		t.Fatalf("the log says too few people could decide with %v; want 3 when asked and 3 after the reminder", got)
	}
}

// undecidableCounts are the deciders of each REQUEST_UNDECIDABLE in the
// run's log, each checked to need needed.
func undecidableCounts(t *testing.T, db Store, runID string, needed int) []int {
	t.Helper()
	var deciders []int
	for _, ev := range runEvents(t, db, runID) {
		if ev.Type == domain.EventRequestUndecidable {
			var p struct {
				Deciders int `json:"deciders"`
				Needed   int `json:"needed"`
			}
			if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Needed != needed {
				t.Fatalf("event %s: %v", ev.Payload, err)
			}
			deciders = append(deciders, p.Deciders)
		}
	}
	return deciders
}

// A request that nobody may decide (the only people who might are the
// run's starter and the requester, as on a fresh install) does not reject
// itself the moment it is asked: its reminder keeps its time. When that
// comes and widening leaves nobody still, the outcome fires at once, and
// its comment says why, not a time that did not pass.
func testNobodyLeftDecidesSayingSo(t *testing.T, open Open) {
	db := open(t)
	clock := clocktest.New(ladderStart)
	var n stepCounter
	policy := domain.ApprovalPolicy{Quorum: 2, Escalation: []domain.Rung{
		{AfterMs: 24 * time.Hour.Milliseconds(), Remind: true},
		{AfterMs: 48 * time.Hour.Milliseconds(), AddApprovers: &domain.Approvers{Role: domain.RoleAdmin}},
		{AfterMs: 72 * time.Hour.Milliseconds(), Outcome: domain.OutcomeReject, Comment: "No decision within 3 days"},
	}}
	e := startEngine(t, db, newRegistry(t, approvalWorkflow("nobody", policy, &n)), engine.Opts{Clock: clock, PollInterval: time.Millisecond})
	run := startRun(t, e, "nobody", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	id := pendingSuspension(t, db, run.ID).ID
	// Give a ladder that climbed at once the time to do it.
	time.Sleep(200 * time.Millisecond)
	if s, err := db.Suspension(t.Context(), id); err != nil || s.Escalated != 0 || s.Status != domain.SuspensionPending {
		t.Fatalf("request %+v, %v; want it pending, no rung fired before its time", s, err)
	}
	clock.Set(ladderStart.Add(24*time.Hour + time.Second))
	done := waitRun(t, db, run.ID, domain.RunSucceeded)
	var in domain.ResumePayload
	var d domain.ApprovalData
	if err := json.Unmarshal(done.Output, &in); err != nil || json.Unmarshal(in.ResumeData, &d) != nil {
		t.Fatalf("output %s: %v", done.Output, err)
	}
	if d.Approved || !strings.HasPrefix(d.Comment, "Nobody who may decide is left: ") || strings.Contains(d.Comment, "3 days") {
		t.Fatalf("the rejection says %q; want why nobody decided, and no time that did not pass", d.Comment)
	}
	if got := undecidableCounts(t, db, run.ID, 2); !slices.Equal(got, []int{0, 0, 0}) {
		t.Fatalf("the log says too few people could decide with %v; want 0 when asked and after each rung that did not decide", got)
	}
}
