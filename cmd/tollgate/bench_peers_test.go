//go:build bench

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// make bench, part peers: River, the PostgreSQL job queue, given the herd's
// load (herdRuns jobs due at one instant) on the PostgreSQL server the
// herd ran on, beside Tollgate's herd there. River is the program in
// bench/river, a module of its own so that it never enters Tollgate's
// go.mod; it is built into a temporary directory and run with the DSN of a
// fresh database on that server, which it migrates with River's own
// migrator.
const (
	riverWorkers = 1_000
	riverDir     = "../../bench/river" // from this package's directory, where go test runs it
)

// peerResult is the JSON line bench/river prints (its type result): times
// in milliseconds, lateness = a worker's start − the jobs' instant.
type peerResult struct {
	River        string  `json:"river"`
	Jobs         int     `json:"jobs"`
	Workers      int     `json:"workers"`
	PoolMaxConns int     `json:"poolMaxConns"`
	LeadMs       float64 `json:"leadMs"`
	InsertMs     float64 `json:"insertMs"`
	FirstLateMs  float64 `json:"firstLateMs"`
	P50LateMs    float64 `json:"p50LateMs"`
	P99LateMs    float64 `json:"p99LateMs"`
	MaxLateMs    float64 `json:"maxLateMs"`
	DrainPerSec  float64 `json:"drainPerSec"`
	AllDoneMs    float64 `json:"allDoneMs"`
	Worked       int     `json:"worked"`
	WorkedTwice  int     `json:"workedTwice"`
	Completed    int     `json:"completed"`
}

func (p peerResult) p99Late() time.Duration { return time.Duration(p.P99LateMs * 1e6) }

// workedOnce reports whether every job ran once, completed, and none early.
func (p peerResult) workedOnce() bool {
	return p.Worked == p.Jobs && p.Completed == p.Jobs && p.WorkedTwice == 0 && p.FirstLateMs >= 0
}

// peersLine is the part's BENCH line: River's figures, Tollgate's herd on
// the same server in the same run, and ratio = Tollgate's p99 / River's.
// Drain is jobs / (the last one's start − the first's) on both sides.
type peersLine struct {
	Name                string `json:"name"`
	Dialect             string `json:"dialect"`
	Peer                string `json:"peer"`
	PeerVersion         string `json:"peerVersion"`
	Workers             int    `json:"workers"`
	Jobs                int    `json:"jobs"`
	FirstLateMs         fig    `json:"firstLateMs"`
	P50LateMs           fig    `json:"p50LateMs"`
	P99LateMs           fig    `json:"p99LateMs"`
	DrainPerSec         fig    `json:"drainPerSec"`
	AllDoneMs           fig    `json:"allDoneMs"`
	TollgateFirstLateMs fig    `json:"tollgateFirstLateMs"`
	TollgateP50LateMs   fig    `json:"tollgateP50LateMs"`
	TollgateP99LateMs   fig    `json:"tollgateP99LateMs"`
	TollgateDrainPerSec fig    `json:"tollgateDrainPerSec"`
	Ratio               ratio  `json:"ratio"`
}

func peersLineOf(r flowBenchResult) peersLine {
	p, h := r.peer, r.herd
	return peersLine{Name: "peers", Dialect: r.dialect, Peer: "river", PeerVersion: p.River, Workers: p.Workers, Jobs: p.Jobs,
		FirstLateMs: fig(p.FirstLateMs), P50LateMs: fig(p.P50LateMs), P99LateMs: fig(p.P99LateMs), DrainPerSec: fig(p.DrainPerSec), AllDoneMs: fig(p.AllDoneMs),
		TollgateFirstLateMs: msFig(h.late.min), TollgateP50LateMs: msFig(h.late.p50), TollgateP99LateMs: msFig(h.late.p99), TollgateDrainPerSec: fig(herdDrain(h)),
		Ratio: ratio(peerRatio(r))}
}

// peerRatio is Tollgate's herd p99 over River's (+Inf when River's is 0).
func peerRatio(r flowBenchResult) float64 {
	return float64(r.herd.late.p99) / float64(r.peer.p99Late())
}

// herdDrain is the herd's runs / (the last next step's start − the
// first's), River's drain rate measured the same way.
func herdDrain(h herdResult) float64 {
	return float64(h.late.n) / (h.late.max - h.late.min).Seconds()
}

// benchRiver builds bench/river and runs it on a fresh database of the
// PostgreSQL server the bench uses, with the herd's count of jobs.
func benchRiver(t *testing.T) *peerResult {
	bin := filepath.Join(t.TempDir(), "river")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	build.Dir = riverDir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", riverDir, err, out)
	}
	dsn := storagetest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-dsn", dsn, "-jobs", strconv.Itoa(herdRuns), "-workers", strconv.Itoa(riverWorkers))
	cmd.Stdout, cmd.Stderr = &out, t.Output()
	if err := cmd.Run(); err != nil {
		t.Fatalf("run %s: %v; it printed %q", riverDir, err, out.String())
	}
	p, err := parsePeer(out.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("River %s, %d workers, pool of %d: %d jobs inserted in %.0fms, due %.0fms after the client's start; lateness first %.1fms p50 %.1fms p99 %.1fms max %.1fms; drain %.1f jobs/s; all completed %.1fms after the instant; %d worked, %d twice, %d completed",
		p.River, p.Workers, p.PoolMaxConns, p.Jobs, p.InsertMs, p.LeadMs, p.FirstLateMs, p.P50LateMs, p.P99LateMs, p.MaxLateMs, p.DrainPerSec, p.AllDoneMs, p.Worked, p.WorkedTwice, p.Completed)
	return p
}

// parsePeer reads the last line of out that holds a JSON object.
func parsePeer(out string) (*peerResult, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.HasPrefix(lines[i], "{") {
			continue
		}
		var p peerResult
		if err := json.Unmarshal([]byte(lines[i]), &p); err != nil {
			return nil, fmt.Errorf("parse River's figures %q: %w", lines[i], err)
		}
		return &p, nil
	}
	return nil, fmt.Errorf("River printed no figures: %q", out)
}

// writePeers writes the table of River beside Tollgate's herd on
// PostgreSQL.
func writePeers(b *strings.Builder, results []flowBenchResult) {
	for _, r := range results {
		p, h := r.peer, r.herd
		if p == nil {
			continue
		}
		fmt.Fprintf(b, "\nPeer: River %s (riverpgxv5, %d workers, default fetch settings, a pool of %d connections) on the same PostgreSQL server,\n",
			p.River, p.Workers, p.PoolMaxConns)
		fmt.Fprintf(b, "a fresh database migrated by rivermigrate: %d jobs due at one instant %.0fs after the client's start (inserted in %.0fms);\n",
			p.Jobs, p.LeadMs/1000, p.InsertMs)
		b.WriteString("lateness = the worker's start − the instant (Tollgate: the next step's start); drain = jobs / (last start − first start):\n\n")
		fmt.Fprintf(b, "%-9s %9s %9s %9s %9s %10s %12s\n", "", "first", "p50", "p99", "max", "all done", "drain")
		fmt.Fprintf(b, "%-9s %9s %9s %9s %9s %10s %10.1f/s  %d of %d worked (%d twice), %d completed\n", "river",
			msOf(p.FirstLateMs), msOf(p.P50LateMs), msOf(p.P99LateMs), msOf(p.MaxLateMs), msOf(p.AllDoneMs), p.DrainPerSec, p.Worked, p.Jobs, p.WorkedTwice, p.Completed)
		fmt.Fprintf(b, "%-9s %9s %9s %9s %9s %10s %10.1f/s  the herd on %s\n", "tollgate",
			ms(h.late.min), ms(h.late.p50), ms(h.late.p99), ms(h.late.max), ms(h.last), herdDrain(h), r.dialect)
		fmt.Fprintf(b, "\nTollgate p99 / River p99: %.2f; River's run: every job worked once and completed, none early: %s\n", peerRatio(r), verdict(p.workedOnce()))
	}
}

// msOf writes milliseconds as ms does a duration.
func msOf(v float64) string { return fmt.Sprintf("%.2fms", v) }
