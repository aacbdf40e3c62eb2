package web

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
)

// The server's metrics, through client_golang: the Go runtime and the
// process; this process's HTTP requests by route and status, its step
// commits and resume latency; and the database's runs, pending requests
// and queue, read at each scrape. The database-wide gauges are labelled
// scope="database": every server reports the same values, so a query
// takes their max across servers, never their sum.
type serverMetrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// promMetrics builds the server's registry once.
func (s *Server) promMetrics() *serverMetrics {
	s.promOnce.Do(func() {
		m := &serverMetrics{reg: prometheus.NewRegistry()}
		m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tollgate_http_requests_total",
			Help: "HTTP requests answered by this process, by route pattern and status code."}, []string{"route", "code"})
		m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tollgate_http_request_duration_seconds",
			Help: "How long this process took to answer, by route pattern (streams last as long as they are open).", Buckets: prometheus.DefBuckets}, []string{"route"})
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			m.requests, m.duration, &stateCollector{s: s})
		s.prom = m
	})
	return s.prom
}

// observe counts one answered request.
func (m *serverMetrics) observe(r *http.Request, status int, d time.Duration) {
	route := routeOf(r)
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

// metricsHTTP serves the registry; a failed read of the database is a 500
// (a scrape that fails is seen; a partial one would look like zeros).
func (s *Server) metricsHTTP() http.Handler {
	return promhttp.HandlerFor(s.promMetrics().reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
}

var (
	database        = prometheus.Labels{"scope": "database"}
	runsDesc        = prometheus.NewDesc("tollgate_runs", "Runs by status, in the whole database.", []string{"status"}, database)
	pendingDesc     = prometheus.NewDesc("tollgate_suspensions_pending", "Pending suspensions by reason, in the whole database.", []string{"reason"}, database)
	queuedDesc      = prometheus.NewDesc("tollgate_jobs_queued", "Jobs in the queue, in the whole database.", nil, database)
	lagDesc         = prometheus.NewDesc("tollgate_job_lag_seconds", "Age of the oldest due job no worker has claimed, in the whole database.", nil, database)
	commitsDesc     = prometheus.NewDesc("tollgate_step_commits_total", "Step outcomes committed by this process.", nil, nil)
	resumeLatDesc   = prometheus.NewDesc("tollgate_resume_latency_seconds", "From a resume's commit to its resumed step's commit, in this process.", nil, nil)
	stepDurDesc     = prometheus.NewDesc("tollgate_step_duration_seconds", "From a worker of this process taking a job to its step's commit, by workflow.", []string{"workflow"}, nil)
	stepFailDesc    = prometheus.NewDesc("tollgate_step_failures_total", "Steps committed by this process that failed their run, by workflow.", []string{"workflow"}, nil)
	notifyDesc      = prometheus.NewDesc("tollgate_notifications_total", "Attempts of this process to deliver mail and webhook events, by channel and outcome (sent, retrying, failed: given up).", []string{"channel", "outcome"}, nil)
	stepRetryDesc   = prometheus.NewDesc("tollgate_step_retries_total", "Steps committed by this process to be run again after a failure, by workflow.", []string{"workflow"}, nil)
	workersBusyDesc = prometheus.NewDesc("tollgate_workers_busy", "Worker slots of this process running a job or reserved for one.", nil, nil)
	workersDesc     = prometheus.NewDesc("tollgate_workers", "Worker slots of this process.", nil, nil)
	firesDesc       = prometheus.NewDesc("tollgate_schedule_fires_total", "Schedule fires this process committed, by outcome (started, skipped, buffered, missed, failed).", []string{"outcome"}, nil)
	resumeLatBucks  = engine.ResumeLatencyBuckets
)

// statsTimeout bounds the database's read at a scrape.
const statsTimeout = 5 * time.Second

// stateCollector reads the database's state and the engine's counters at
// each scrape.
type stateCollector struct{ s *Server }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{runsDesc, pendingDesc, queuedDesc, lagDesc, commitsDesc, resumeLatDesc, stepDurDesc, stepFailDesc, stepRetryDesc, notifyDesc, workersBusyDesc, workersDesc, firesDesc} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if e := c.s.Engine; e != nil {
		ch <- prometheus.MustNewConstMetric(commitsDesc, prometheus.CounterValue, float64(e.Metrics.Commits()))
		busy, capacity := e.Workers()
		ch <- prometheus.MustNewConstMetric(workersBusyDesc, prometheus.GaugeValue, float64(busy))
		ch <- prometheus.MustNewConstMetric(workersDesc, prometheus.GaugeValue, float64(capacity))
		cum, sum, count := e.Metrics.ResumeLatency()
		buckets := make(map[float64]uint64, len(resumeLatBucks))
		for i, le := range resumeLatBucks {
			buckets[le] = cum[i]
		}
		ch <- prometheus.MustNewConstHistogram(resumeLatDesc, count, sum, buckets)
		for wf, st := range e.Metrics.Steps() {
			buckets := make(map[float64]uint64, len(engine.StepDurationBuckets))
			var acc uint64
			for i, le := range engine.StepDurationBuckets {
				acc += st.Buckets[i]
				buckets[le] = acc
			}
			ch <- prometheus.MustNewConstHistogram(stepDurDesc, st.Count, st.Sum, buckets, wf)
			ch <- prometheus.MustNewConstMetric(stepFailDesc, prometheus.CounterValue, float64(st.Failures), wf)
			ch <- prometheus.MustNewConstMetric(stepRetryDesc, prometheus.CounterValue, float64(st.Retries), wf)
		}
		fires := e.Metrics.Fires()
		for _, o := range []domain.FireOutcome{domain.FireStarted, domain.FireSkipped, domain.FireBuffered, domain.FireMissed, domain.FireFailed} {
			ch <- prometheus.MustNewConstMetric(firesDesc, prometheus.CounterValue, float64(fires[o]), string(o))
		}
	}
	for k, n := range c.s.Deliveries.Snapshot() {
		ch <- prometheus.MustNewConstMetric(notifyDesc, prometheus.CounterValue, float64(n), k[0], k[1])
	}
	if c.s.Health == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	now := c.s.Clock.Now()
	st, err := c.s.Health.Stats(ctx, now)
	if err != nil {
		c.s.Log.Error("Collecting metrics failed", "error", err)
		ch <- prometheus.NewInvalidMetric(runsDesc, err)
		return
	}
	for _, status := range domain.RunStatuses {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(st.RunsByStatus[status]), string(status))
	}
	for reason, n := range st.PendingByReason {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n), reason)
	}
	ch <- prometheus.MustNewConstMetric(queuedDesc, prometheus.GaugeValue, float64(st.QueuedJobs))
	lag := 0.0
	if st.OldestDue != nil {
		lag = max(now.Sub(*st.OldestDue).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, lag)
}
