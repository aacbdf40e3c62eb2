package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An http step's header may name a secret of the server's environment:
// the call carries its value, read when the call is made, and no answer
// shows it; a secret that is not set fails the run with an error that
// names it. Not parallel: the secret is in the process's environment.
func TestHTTPStepSecretsComeFromTheEnvironment(t *testing.T) {
	const value = "Bearer env-secret-7c1d"
	t.Setenv("TOLLGATE_TEST_PAYMENTS_TOKEN", value)
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		_, _ = w.Write([]byte(`{"success": true, "outputs": {"ok": true}}`))
	}))
	defer srv.Close()
	s := startServer(t, map[string]string{}, "--http-allow", "127.0.0.1")
	c := s.client()
	doc := func(id, secret string) string {
		return `{"id": "` + id + `", "version": "1", "steps": [{"type": "http", "name": "charge", "url": "` + srv.URL + `",
			"headers": {"Authorization": {"$secret": "` + secret + `"}}}]}`
	}
	c.register(t, doc("charge", "TOLLGATE_TEST_PAYMENTS_TOKEN"))
	run := c.startRun(t, "charge", map[string]any{})
	c.waitStatus(t, run.ID, "succeeded")
	if a := <-got; a != value {
		t.Errorf("the endpoint received Authorization %q", a)
	}
	for _, path := range []string{"/api/v1/workflows", "/api/v1/runs/" + run.ID, "/api/v1/runs/" + run.ID + "/events"} {
		if r := c.call(t, http.StatusOK, "GET", path, nil); strings.Contains(string(r.Body), "env-secret") {
			t.Errorf("%s shows the secret: %s", path, r.Body)
		}
	}

	c.register(t, doc("charge-missing", "TOLLGATE_TEST_NOT_SET"))
	failed := c.waitStatus(t, c.startRun(t, "charge-missing", map[string]any{}).ID, "failed")
	if failed.Error == nil || !strings.Contains(failed.Error.Message, "secret TOLLGATE_TEST_NOT_SET is not set") {
		t.Errorf("a missing secret failed the run with %+v", failed.Error)
	}
}
