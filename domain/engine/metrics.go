package engine

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// ResumeLatencyBuckets are the upper bounds, in seconds, of the resume
// latency histogram: from a resume's commit to its resumed step's commit.
var ResumeLatencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// StepDurationBuckets are the upper bounds, in seconds, of the step
// duration histograms: from a worker taking a job to its step's commit.
var StepDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Metrics are the engine's in-process counters, exported by the web layer.
type Metrics struct {
	mu      sync.Mutex
	counts  []uint64 // per bucket, plus +Inf
	sum     float64
	total   uint64
	commits uint64
	steps   map[string]*StepStats // by workflow
	fires   map[domain.FireOutcome]uint64
}

// StepStats are one workflow's committed steps in this process: their
// durations (per StepDurationBuckets, plus +Inf, not cumulative), and how
// many failed their run or were to be retried.
type StepStats struct {
	Buckets  []uint64
	Sum      float64
	Count    uint64
	Failures uint64
	Retries  uint64
}

// NewMetrics returns zeroed metrics.
func NewMetrics() *Metrics {
	return &Metrics{counts: make([]uint64, len(ResumeLatencyBuckets)+1), steps: map[string]*StepStats{}, fires: map[domain.FireOutcome]uint64{}}
}

// fired counts committed schedule fires by outcome; a missed record
// counts every fire it stands for.
func (m *Metrics) fired(fires []domain.ScheduleFire) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range fires {
		m.fires[f.Outcome] += uint64(max(f.Count, 1))
	}
}

// Fires is how many schedule fires this process committed, by outcome.
func (m *Metrics) Fires() map[domain.FireOutcome]uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.fires)
}

// observeStep counts one committed step of workflow that took d: a
// failure when it failed its run, a retry when it is to run again.
func (m *Metrics) observeStep(workflow string, c domain.StepCommit, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.steps[workflow]
	if st == nil {
		st = &StepStats{Buckets: make([]uint64, len(StepDurationBuckets)+1)}
		m.steps[workflow] = st
	}
	secs := max(d.Seconds(), 0)
	st.Buckets[bucketOf(StepDurationBuckets, secs)]++
	st.Sum += secs
	st.Count++
	switch {
	case c.RetryAt != nil:
		st.Retries++
	case c.Finish != nil && c.Finish.Status == domain.RunFailed:
		st.Failures++
	}
}

// Steps is a snapshot of the step statistics, by workflow.
func (m *Metrics) Steps() map[string]StepStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]StepStats, len(m.steps))
	for wf, st := range m.steps {
		c := *st
		c.Buckets = slices.Clone(st.Buckets)
		out[wf] = c
	}
	return out
}

func (m *Metrics) observeCommit(job domain.Job, _ domain.CommitResult, c domain.StepCommit, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	if job.Kind != domain.JobResume || c.RetryAt != nil {
		return
	}
	// The job's run-at is when the resume committed (or the timer was due).
	d := max(now.Sub(job.RunAt).Seconds(), 0)
	m.counts[bucketOf(ResumeLatencyBuckets, d)]++
	m.sum += d
	m.total++
}

// ResumeLatency is a snapshot of the histogram: cumulative counts per
// bucket (the last is +Inf), the sum of observations and their count.
func (m *Metrics) ResumeLatency() (cumulative []uint64, sum float64, count uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cumulative = make([]uint64, len(m.counts))
	var acc uint64
	for i, c := range m.counts {
		acc += c
		cumulative[i] = acc
	}
	return cumulative, m.sum, m.total
}

// Commits counts committed step outcomes.
func (m *Metrics) Commits() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.commits
}

// bucketOf is the index of the first of bounds that v does not exceed, or
// len(bounds) (+Inf).
func bucketOf(bounds []float64, v float64) int {
	i := 0
	for i < len(bounds) && v > bounds[i] {
		i++
	}
	return i
}
