//go:build bench

package main

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// What approval policies cost: the memory of pending approvals whose
// deadline ladders wait (rungs are rows in the queue, not timers in the
// process), and how long one person's vote takes to commit.
var (
	ladderRuns = benchSize("TOLLGATE_BENCH_LADDERS", 10_000, 1_000)
	voteRuns   = benchSize("TOLLGATE_BENCH_VOTES", 300, 50)
)

const (
	plainApprovalDoc = `{"id": "plain-approval", "version": "1", "steps": [{"type": "approval", "name": "ok"}]}`
	ladderDoc        = `{"id": "laddered", "version": "1", "steps": [{"type": "approval", "name": "ok", "escalation": [
		{"afterMs": 86400000, "remind": true},
		{"afterMs": 172800000, "addApprovers": {"role": "admin"}},
		{"afterMs": 259200000, "outcome": "reject", "comment": "No decision within 3 days"}]}]}`
	quorumDoc = `{"id": "two-votes", "version": "1", "steps": [{"type": "approval", "name": "ok", "quorum": 2}]}`
)

type policiesResult struct {
	dialect string
	// rssPlain and rssLadders: resident memory after rssSmall pending
	// approvals without a ladder, then after ladderRuns more with one.
	rssPlain, rssLadders int64
	// vote: a kept vote (one of a quorum of two); decide: a vote that
	// decides an approval (its run goes on), both from one client.
	vote, decide durStats
}

type policiesLine struct {
	Name            string `json:"name"`
	Dialect         string `json:"dialect"`
	LadderApprovals int    `json:"ladderApprovals"`
	RSSGrowthMiB    fig    `json:"rssGrowthMiB"`
	VoteP50Ms       fig    `json:"voteP50Ms"`
	VoteP99Ms       fig    `json:"voteP99Ms"`
	DecideP50Ms     fig    `json:"decideP50Ms"`
	DecideP99Ms     fig    `json:"decideP99Ms"`
}

func TestBenchPolicies(t *testing.T) {
	benchParts(t, "policies")
	var results []policiesResult
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			c, eng, db, stop := flowServer(t, dialect, newStamps(), nil, plainApprovalDoc, ladderDoc, quorumDoc)
			defer stop()
			r := policiesResult{dialect: dialect}
			startSuspended(t, eng, db, "plain-approval", 0, rssSmall, nil)
			r.rssPlain = residentBytes(t)
			startSuspended(t, eng, db, "laddered", 0, ladderRuns, nil)
			r.rssLadders = residentBytes(t)
			t.Logf("RSS %s with %d plain approvals, %s with %d approvals with ladders more", mib(r.rssPlain), rssSmall, mib(r.rssLadders), ladderRuns)
			r.vote = timeVotes(t, c, "two-votes")
			r.decide = timeVotes(t, c, "plain-approval")
			results = append(results, r)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nApproval policies through the server; GOMAXPROCS %d, %d CPUs.\n", runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(&b, "RSS: VmRSS after runtime.GC + debug.FreeOSMemory, with %d pending approvals, then with %d more whose ladders wait (three rungs).\n", rssSmall, ladderRuns)
	fmt.Fprintf(&b, "Vote: POST /approve from one client, %d each: kept (one of a quorum of two) and deciding (the run goes on).\n\n", voteRuns)
	fmt.Fprintf(&b, "%-9s %10s %12s %11s | %-19s | %s\n", "dialect", "plain", "+ladders", "difference", "kept vote p50/p99", "deciding vote p50/p99")
	for _, r := range results {
		fmt.Fprintf(&b, "%-9s %10s %12s %11s | %8s/%-9s | %8s/%s\n", r.dialect, mib(r.rssPlain), mib(r.rssLadders), mib(r.rssLadders-r.rssPlain),
			ms(r.vote.p50), ms(r.vote.p99), ms(r.decide.p50), ms(r.decide.p99))
	}
	b.WriteString("\nTargets:\n")
	for _, r := range results {
		d := r.rssLadders - r.rssPlain
		fmt.Fprintf(&b, "  %s  %-8s %d pending approvals with ladders add ≤ 20 MiB: %s\n", verdict(d <= 20<<20), r.dialect, ladderRuns, mib(d))
		if r.dialect == "postgres" {
			fmt.Fprintf(&b, "  %s  %-8s a vote's commit p50 ≤ 5ms at one client: kept %s, deciding %s\n", verdict(r.vote.p50 <= 5*time.Millisecond), r.dialect, ms(r.vote.p50), ms(r.decide.p50))
		}
	}
	fmt.Print(b.String())
	for _, r := range results {
		benchLine(t, policiesLine{Name: "policies", Dialect: r.dialect, LadderApprovals: ladderRuns, RSSGrowthMiB: mibFig(r.rssLadders - r.rssPlain),
			VoteP50Ms: msFig(r.vote.p50), VoteP99Ms: msFig(r.vote.p99), DecideP50Ms: msFig(r.decide.p50), DecideP99Ms: msFig(r.decide.p99)})
	}
}

// timeVotes starts voteRuns runs of workflow, each pausing on an
// approval, and times the one client's approval of each.
func timeVotes(t *testing.T, c *client, workflow string) durStats {
	ids := make([]string, voteRuns)
	for i := range ids {
		run := c.startRun(t, workflow, map[string]int{"n": i})
		ids[i] = run.ID
	}
	var took []time.Duration
	for _, id := range ids {
		c.waitStatus(t, id, "suspended")
		ss := c.suspensions(t, "runId="+id+"&status=pending")
		if len(ss) != 1 {
			t.Fatalf("run %s waits on %+v", id, ss)
		}
		began := time.Now()
		r, err := c.do(context.Background(), "POST", "/api/v1/suspensions/"+ss[0].ID+"/approve", map[string]string{})
		if err != nil || r.Status != http.StatusOK {
			t.Fatalf("approve: %v %d %s", err, r.Status, r.Body)
		}
		took = append(took, time.Since(began))
	}
	return summarize(took)
}
