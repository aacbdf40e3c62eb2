package web

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
)

// healthz answers while the process serves, with its version.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.Version})
}

// readyz answers 200 only when the database answers and its schema is
// current, so a load balancer sends no traffic to a server that cannot work.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.Health.Ping(ctx); err != nil {
		writeProblem(w, r, newProblem(http.StatusServiceUnavailable, "database_unreachable", "The database does not answer."))
		return
	}
	ok, err := s.Health.MigrationsCurrent(ctx)
	if err != nil || !ok {
		writeProblem(w, r, newProblem(http.StatusServiceUnavailable, "migrations_pending", "The database schema is not current; run tollgate migrate."))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// MetricsHandler serves /metrics alone (with MetricsToken's check), for a
// listener of its own; see MetricsElsewhere.
func (s *Server) MetricsHandler() http.Handler {
	if s.Clock == nil {
		s.Clock = domain.SystemClock{}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.requireMetricsToken(http.HandlerFunc(s.metrics)))
	return s.recoverPanics(securityHeaders(mux))
}

// requireMetricsToken lets a scrape through when MetricsToken is unset or
// the request carries it as a bearer token. The tokens are compared by
// their SHA-256, in constant time, so neither their content nor their
// length shows in the timing.
func (s *Server) requireMetricsToken(next http.Handler) http.Handler {
	if s.MetricsToken == "" {
		return next
	}
	want := sha256Bytes(s.MetricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sha256Bytes(strings.TrimSpace(token)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tollgate metrics"`)
			writeProblem(w, r, newProblem(http.StatusUnauthorized, "unauthorized", "The metrics token is required: Authorization: Bearer <token>."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// metrics writes the Prometheus text format.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	now := s.Clock.Now()
	st, err := s.Health.Stats(r.Context(), now)
	if err != nil {
		s.Log.ErrorContext(r.Context(), "Collecting metrics failed", "error", err)
		http.Error(w, "metrics unavailable", http.StatusServiceUnavailable)
		return
	}
	var b strings.Builder
	b.WriteString("# HELP tollgate_runs Runs by status.\n# TYPE tollgate_runs gauge\n")
	for _, status := range domain.RunStatuses {
		fmt.Fprintf(&b, "tollgate_runs{status=%q} %d\n", status, st.RunsByStatus[status])
	}
	b.WriteString("# HELP tollgate_suspensions_pending Pending suspensions by reason.\n# TYPE tollgate_suspensions_pending gauge\n")
	reasons := make([]string, 0, len(st.PendingByReason))
	for reason := range st.PendingByReason {
		reasons = append(reasons, reason)
	}
	slices.Sort(reasons)
	for _, reason := range reasons {
		fmt.Fprintf(&b, "tollgate_suspensions_pending{reason=%q} %d\n", reason, st.PendingByReason[reason])
	}
	lag := 0.0
	if st.OldestDue != nil {
		lag = max(now.Sub(*st.OldestDue).Seconds(), 0)
	}
	fmt.Fprintf(&b, "# HELP tollgate_jobs_queued Jobs in the queue.\n# TYPE tollgate_jobs_queued gauge\ntollgate_jobs_queued %d\n", st.QueuedJobs)
	fmt.Fprintf(&b, "# HELP tollgate_job_lag_seconds Age of the oldest due, unclaimed job.\n# TYPE tollgate_job_lag_seconds gauge\ntollgate_job_lag_seconds %g\n", lag)
	fmt.Fprintf(&b, "# HELP tollgate_step_commits_total Step outcomes committed by this process.\n# TYPE tollgate_step_commits_total counter\ntollgate_step_commits_total %d\n", s.Engine.Metrics.Commits())
	cum, sum, count := s.Engine.Metrics.ResumeLatency()
	b.WriteString("# HELP tollgate_resume_latency_seconds From a resume's commit to its resumed step's commit.\n# TYPE tollgate_resume_latency_seconds histogram\n")
	for i, le := range engine.ResumeLatencyBuckets {
		fmt.Fprintf(&b, "tollgate_resume_latency_seconds_bucket{le=\"%g\"} %d\n", le, cum[i])
	}
	fmt.Fprintf(&b, "tollgate_resume_latency_seconds_bucket{le=\"+Inf\"} %d\n", cum[len(cum)-1])
	fmt.Fprintf(&b, "tollgate_resume_latency_seconds_sum %g\ntollgate_resume_latency_seconds_count %d\n", sum, count)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write([]byte(b.String()))
}
