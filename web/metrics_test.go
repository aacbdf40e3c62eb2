package web_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// With MetricsToken, /metrics answers only a scrape that carries it.
func TestMetricsRequireTheirToken(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) { s.MetricsToken = "scrape-token-0123456789" })
	problem(t, e.call(t, "GET", "/metrics", "", ""), http.StatusUnauthorized, "unauthorized")
	problem(t, e.call(t, "GET", "/metrics", "", "", "Authorization", "Bearer scrape-token-012345678"), http.StatusUnauthorized, "unauthorized")
	problem(t, e.call(t, "GET", "/metrics", e.admin, ""), http.StatusUnauthorized, "unauthorized") // an API key is not the token
	r := e.call(t, "GET", "/metrics", "", "", "Authorization", "bearer scrape-token-0123456789")
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "tollgate_runs{") {
		t.Fatalf("scrape with the token: %s", r)
	}
}

// With MetricsElsewhere, the main handler has no /metrics; MetricsHandler
// serves it and nothing else.
func TestMetricsOnTheirOwnHandler(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) { s.MetricsElsewhere = true })
	want(t, e.call(t, "GET", "/metrics", "", ""), http.StatusNotFound)
	own := httptest.NewServer(e.api.MetricsHandler())
	t.Cleanup(own.Close)
	for path, status := range map[string]int{"/metrics": http.StatusOK, "/healthz": http.StatusNotFound, "/api/v1/runs": http.StatusNotFound} {
		resp, err := own.Client().Get(own.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Errorf("GET %s on the metrics listener = %d, want %d", path, resp.StatusCode, status)
		}
	}
}
