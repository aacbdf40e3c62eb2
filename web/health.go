package web

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// healthz answers while the process serves, with its version.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.Version})
}

// readyz answers 200 only when the database answers and its schema is
// current, so a load balancer sends no traffic to a server that cannot work.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.Health.Ping(ctx); err != nil {
		WriteProblem(w, r, NewProblem(http.StatusServiceUnavailable, "database_unreachable", "The database does not answer."))
		return
	}
	ok, err := s.Health.MigrationsCurrent(ctx)
	if err != nil || !ok {
		WriteProblem(w, r, NewProblem(http.StatusServiceUnavailable, "migrations_pending", "The database schema is not current; run tollgate migrate."))
		return
	}
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// MetricsHandler serves /metrics alone (with MetricsToken's check), for a
// listener of its own; see MetricsElsewhere.
func (s *Server) MetricsHandler() http.Handler {
	if s.Clock == nil {
		s.Clock = domain.SystemClock{}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.requireMetricsToken(s.metricsHTTP()))
	return s.recoverPanics(SecurityHeaders(mux))
}

// requireMetricsToken lets a scrape through when MetricsToken is unset or
// the request carries it as a bearer token. The tokens are compared by
// their SHA-256, in constant time, so neither their content nor their
// length shows in the timing.
func (s *Server) requireMetricsToken(next http.Handler) http.Handler {
	if s.MetricsToken == "" {
		return next
	}
	want := SHA256Bytes(s.MetricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(SHA256Bytes(strings.TrimSpace(token)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tollgate metrics"`)
			WriteProblem(w, r, NewProblem(http.StatusUnauthorized, "unauthorized", "The metrics token is required: Authorization: Bearer <token>."))
			return
		}
		next.ServeHTTP(w, r)
	})
}
