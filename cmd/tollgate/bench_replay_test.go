//go:build bench

package main

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/replay"
)

// make bench, replay workflows: the cost of replaying 1,000 completed
// steps in each invocation, and the time from a signal's delivery to the
// handler going on past its wait — through the server as serve wires it.
const (
	replaySteps  = 1000
	replayRounds = 200
	signalRounds = 500
)

// replayTimes is what the bench replay workflow reports: when each run's
// current invocation started (RUN_STARTED), and when a round's wait was
// first seen resolved.
var replayTimes struct {
	sync.Mutex
	started  map[string]time.Time
	resumed  map[string]time.Time // "runID round"
	seen     chan string          // each key of resumed as it is added
	replayed []time.Duration      // RUN_STARTED → past the replayed steps
}

func replayObserve(runID string, e domain.Event) {
	if e.Type != replay.EventRunStarted {
		return
	}
	replayTimes.Lock()
	defer replayTimes.Unlock()
	if replayTimes.started != nil {
		replayTimes.started[runID] = time.Now()
	}
}

// benchReplay runs Steps steps, then waits Rounds times for a "tick"
// signal; it reports when it is past the steps and past each new wait.
func benchReplay() *replay.Definition {
	return replay.Workflow("bench-replay", "1", func(c *replay.Context, in struct{ Steps, Rounds int }) (int, error) {
		for i := range in.Steps {
			if _, err := replay.Step(c, fmt.Sprint("s-", i), func(context.Context) (int, error) { return i, nil }); err != nil {
				return 0, err
			}
		}
		past := time.Now()
		for r := range in.Rounds {
			if _, err := replay.WaitForEvent[int](c, "tick", replay.WithID(fmt.Sprint("tick-", r))); err != nil {
				if r == 0 || err != replay.ErrPaused {
					return 0, err
				}
				replayTimes.Lock()
				if start, ok := replayTimes.started[c.RunID]; ok && in.Steps > 0 {
					replayTimes.replayed = append(replayTimes.replayed, past.Sub(start))
				}
				replayTimes.Unlock()
				return 0, err
			}
			key := fmt.Sprint(c.RunID, " ", r)
			replayTimes.Lock()
			if _, seen := replayTimes.resumed[key]; !seen && replayTimes.resumed != nil {
				replayTimes.resumed[key] = time.Now()
				select {
				case replayTimes.seen <- key:
				default:
				}
			}
			replayTimes.Unlock()
		}
		return in.Rounds, nil
	})
}

type replayBenchResult struct {
	dialect           string
	replay            durStats      // replaying 1,000 steps, in the handler
	cpuPerInvocation  time.Duration // process CPU per signal round, 1,000-step run
	wallPerInvocation time.Duration
	signal            durStats
}

// replayLine is the replay part's BENCH line.
type replayLine struct {
	Name           string `json:"name"`
	Dialect        string `json:"dialect"`
	Steps          int    `json:"steps"`
	ReplayP50Ms    fig    `json:"replayP50Ms"`
	ReplayP99Ms    fig    `json:"replayP99Ms"`
	CPUPerRoundMs  fig    `json:"cpuPerRoundMs"`
	WallPerRoundMs fig    `json:"wallPerRoundMs"`
	SignalP50Ms    fig    `json:"signalP50Ms"`
	SignalP99Ms    fig    `json:"signalP99Ms"`
}

func TestBenchReplay(t *testing.T) {
	benchParts(t, "replay")
	var results []replayBenchResult
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			results = append(results, benchReplayOn(t, dialect))
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nReplay workflows through the HTTP API, one client; GOMAXPROCS %d.\n", runtime.GOMAXPROCS(0))
	fmt.Fprintf(&b, "replay: a run with 1,000 completed steps resumed by a signal, each invocation replaying them all (handler's\n"+
		"        RUN_STARTED → past the 1,000th step); cpu: the whole process's CPU (user+sys: HTTP, engine, SQLite, replay)\n"+
		"        per signal round. signal: POST /signals sent → the handler past its wait, each of %d runs paused at its first wait.\n\n", signalRounds)
	fmt.Fprintf(&b, "%-9s %-21s %-21s %-27s\n", "dialect", "replay p50 / p99", "cpu / wall per round", "signal→resumed p50/p99/max")
	for _, r := range results {
		fmt.Fprintf(&b, "%-9s %8s / %8s   %8s / %8s   %8s / %8s / %8s\n", r.dialect, ms(r.replay.p50), ms(r.replay.p99),
			ms(r.cpuPerInvocation), ms(r.wallPerInvocation), ms(r.signal.p50), ms(r.signal.p99), ms(r.signal.max))
	}
	b.WriteString("\nTargets:\n")
	for _, r := range results {
		fmt.Fprintf(&b, "  %s  %-8s replaying 1,000 steps ≤ 5ms CPU per invocation: replay p50 %s, whole process %s per round\n",
			verdict(r.replay.p50 <= 5*time.Millisecond), r.dialect, ms(r.replay.p50), ms(r.cpuPerInvocation))
		fmt.Fprintf(&b, "  %s  %-8s signal → handler resumed p50 ≤ 5ms: %s\n", verdict(r.signal.p50 <= 5*time.Millisecond), r.dialect, ms(r.signal.p50))
	}
	fmt.Print(b.String())
	for _, r := range results {
		benchLine(t, replayLine{Name: "replay", Dialect: r.dialect, Steps: replaySteps, ReplayP50Ms: msFig(r.replay.p50), ReplayP99Ms: msFig(r.replay.p99),
			CPUPerRoundMs: msFig(r.cpuPerInvocation), WallPerRoundMs: msFig(r.wallPerInvocation), SignalP50Ms: msFig(r.signal.p50), SignalP99Ms: msFig(r.signal.p99)})
	}
}

func benchReplayOn(t *testing.T, dialect string) replayBenchResult {
	res := replayBenchResult{dialect: dialect}
	var errs atomic.Int64
	c, _, _, stop := benchServer(t, dialect, &errs, nil)
	defer stop()
	ctx := t.Context()
	replayTimes.Lock()
	replayTimes.started, replayTimes.resumed, replayTimes.replayed = map[string]time.Time{}, map[string]time.Time{}, nil
	replayTimes.seen = make(chan string, 16)
	replayTimes.Unlock()

	start := func(steps, rounds int) string {
		return c.startRun(t, "bench-replay", map[string]int{"Steps": steps, "Rounds": rounds}).ID
	}
	waitSuspended := func(id string) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if _, err := awaitStatus(ctx, c.getRun, id, string(domain.RunSuspended), 5*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	// signal sends round r's tick and waits until the handler is past it.
	signal := func(id string, r int) time.Duration {
		key := fmt.Sprint(id, " ", r)
		sent := time.Now()
		c.call(t, http.StatusOK, "POST", "/api/v1/runs/"+id+"/signals", map[string]any{"name": "tick", "signalId": key, "stepId": fmt.Sprint("tick-", r), "payload": r})
		timeout := time.After(time.Minute)
		for {
			select {
			case k := <-replayTimes.seen:
				if k != key {
					continue
				}
				replayTimes.Lock()
				defer replayTimes.Unlock()
				return replayTimes.resumed[key].Sub(sent)
			case <-timeout:
				t.Fatalf("round %d of run %s did not resume within a minute", r, id)
			}
		}
	}

	long := start(replaySteps, replayRounds+1)
	waitSuspended(long)
	before, wall := cpuTime(t), time.Now()
	for r := range replayRounds {
		signal(long, r)
		waitSuspended(long)
	}
	res.cpuPerInvocation = (cpuTime(t) - before) / replayRounds
	res.wallPerInvocation = time.Since(wall) / replayRounds
	replayTimes.Lock()
	res.replay = summarize(replayTimes.replayed)
	replayTimes.Unlock()

	// Each signal resumes a run of its own, paused at its first wait: the
	// figure is delivery and wake-up, not the reading of a log that grows
	// with every round (the replay figure above measures that).
	waiting := make([]string, signalRounds)
	for i := range waiting {
		waiting[i] = start(0, 1)
		waitSuspended(waiting[i])
	}
	var lat []time.Duration
	for _, id := range waiting {
		lat = append(lat, signal(id, 0))
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err := awaitStatus(ctx, c.getRun, id, string(domain.RunSucceeded), time.Millisecond)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	res.signal = summarize(lat)
	if n := errs.Load(); n > 0 {
		t.Errorf("the server logged %d errors", n)
	}
	return res
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
