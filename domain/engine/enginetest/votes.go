package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
)

// voteTests are the rules of an approval decided by several people: a
// quorum resolves it once, whatever the concurrency, and each person votes
// once.
var voteTests = []test{
	{"QuorumResolvesOnce", testQuorumResolvesOnce},
	{"EachPersonVotesOnce", testEachPersonVotesOnce},
}

// approvalWorkflow asks for an approval under policy p, then finishes
// with the decision it resumed with (its resume payload).
func approvalWorkflow(id string, p domain.ApprovalPolicy, n *stepCounter) *domain.Workflow {
	return domain.NewWorkflow(id, "1").
		Step("ask", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Review("sign-off", nil, domain.WithPolicy(p), domain.WithResumeStep("decided"))}}, nil
		}).
		Step("decided", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			n.Inc("decided")
			return domain.StepResult{Output: req.Input}, nil
		})
}

// vote decides suspension id as person by.
func vote(ctx context.Context, e *engine.Engine, id, by string, approve bool, key string) (domain.Suspension, error) {
	return e.Decide(ctx, domain.ResumeRequest{SuspensionID: id, By: by, RequestKey: key}, approve, "from "+by)
}

// Six people vote at once on an approval that two approvals or two
// rejections decide, over several rounds: exactly one vote resolves it,
// the votes kept are exactly those that counted (each person once), the
// decision the step receives carries them all, and the step runs once.
// Everyone who voted after the decision is told it was decided.
func testQuorumResolvesOnce(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	e := startEngine(t, db, newRegistry(t, approvalWorkflow("quorum", domain.ApprovalPolicy{Quorum: 2, Rejections: 2}, &n)), engine.Opts{})
	const rounds, voters = 5, 6
	for round := range rounds {
		run := startRun(t, e, "quorum", round)
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)
		errs := make([]error, voters)
		out := make([]domain.Suspension, voters)
		var wg sync.WaitGroup
		ready := make(chan struct{})
		for i := range voters {
			wg.Go(func() {
				<-ready
				out[i], errs[i] = vote(ctx, e, s.ID, fmt.Sprintf("voter-%d@x.test", i), i%2 == 0, "")
			})
		}
		close(ready)
		wg.Wait()
		resolved, kept := 0, 0
		for i, err := range errs {
			var ce *domain.ConflictError
			switch {
			case err == nil && out[i].Status == domain.SuspensionResumed:
				resolved++
			case err == nil && out[i].Status == domain.SuspensionPending:
				kept++
			case errors.As(err, &ce) && ce.Code == domain.CodeAlreadyResumed:
			default:
				t.Fatalf("round %d: voter %d got %+v, %v; want a vote kept, the resolving vote, or %s", round, i, out[i], err, domain.CodeAlreadyResumed)
			}
		}
		if resolved != 1 {
			t.Fatalf("round %d: %d votes resolved the approval; want exactly 1", round, resolved)
		}
		done := waitRun(t, db, run.ID, domain.RunSucceeded)
		var in domain.ResumePayload
		var d domain.ApprovalData
		if err := json.Unmarshal(done.Output, &in); err != nil || json.Unmarshal(in.ResumeData, &d) != nil {
			t.Fatalf("round %d: the step received %s", round, done.Output)
		}
		got, err := db.Suspension(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Votes) != kept+1 || len(d.Votes) != len(got.Votes) {
			t.Fatalf("round %d: %d votes stored, %d in the decision; want %d (the kept ones and the deciding one)", round, len(got.Votes), len(d.Votes), kept+1)
		}
		tally := domain.TallyOf(got.Policy, got.Votes)
		if outcome := tally.Outcome(); outcome == "" || outcome != got.Decision || d.Approved != (outcome == domain.DecisionApproved) {
			t.Fatalf("round %d: votes %+v reach %q; the suspension says %q, the step approved=%v", round, got.Votes, outcome, got.Decision, d.Approved)
		}
		if last := got.Votes[len(got.Votes)-1]; tally.Approvals > 2 || tally.Rejections > 2 || d.Votes[len(d.Votes)-1].Voter != got.ResumedBy {
			t.Fatalf("round %d: votes past the decision were counted (%+v), or it was resolved by %s, not the last voter %s", round, tally, got.ResumedBy, last.Voter)
		}
	}
	if n.Get("decided") != rounds {
		t.Fatalf("the decided step ran %d times over %d rounds; want once a round", n.Get("decided"), rounds)
	}
}

// A person votes once: a second vote, even the other way, is refused and
// changes nothing; the same request sent again (its Idempotency-Key) is
// answered as the first time.
func testEachPersonVotesOnce(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	e := startEngine(t, db, newRegistry(t, approvalWorkflow("twice", domain.ApprovalPolicy{Quorum: 2}, &n)), engine.Opts{})
	run := startRun(t, e, "twice", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	s := pendingSuspension(t, db, run.ID)
	first, err := vote(ctx, e, s.ID, "ann@x.test", true, "k1")
	if err != nil || first.Status != domain.SuspensionPending || len(first.Votes) != 1 {
		t.Fatalf("first vote = %+v, %v; want kept, the approval pending with one vote", first, err)
	}
	again, err := vote(ctx, e, s.ID, "ann@x.test", true, "k1")
	if err != nil || again.Status != domain.SuspensionPending || len(again.Votes) != 1 {
		t.Fatalf("the same request again = %+v, %v; want the first answer", again, err)
	}
	var ce *domain.ConflictError
	if _, err := vote(ctx, e, s.ID, "ANN@x.test", false, "k2"); !errors.As(err, &ce) || ce.Code != domain.CodeAlreadyVoted {
		t.Fatalf("a second vote = %v; want %s", err, domain.CodeAlreadyVoted)
	}
	if got := pendingSuspension(t, db, run.ID); len(got.Votes) != 1 || got.Votes[0].Decision != domain.DecisionApproved {
		t.Fatalf("after the refused vote: %+v; want Ann's approval alone", got.Votes)
	}
	if _, err := vote(ctx, e, s.ID, "bob@x.test", true, ""); err != nil {
		t.Fatal(err)
	}
	waitRun(t, db, run.ID, domain.RunSucceeded)
	// Ann's first request, retried after the decision, still gets an
	// answer rather than a conflict.
	if got, err := vote(ctx, e, s.ID, "ann@x.test", true, "k1"); err != nil || got.Status != domain.SuspensionResumed {
		t.Fatalf("Ann's request retried after the decision = %+v, %v; want the approval as it is", got, err)
	}
}
