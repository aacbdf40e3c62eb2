package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain/hook"
)

// serve delivers webhooks: a subscription made through the API hears
// about a run that succeeds, signed under its secret, with a link to the
// run's page on the public URL.
func TestServeDeliversSignedWebhooks(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		type delivery struct {
			body   []byte
			header http.Header
		}
		got := make(chan delivery, 10)
		rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got <- delivery{b, r.Header.Clone()}
		}))
		defer rc.Close()
		s := startServer(t, env, "--http-allow", "127.0.0.1", "--public-url", "https://tollgate.example.com")
		c := s.client()
		var sub struct{ ID, Secret string }
		c.call(t, http.StatusCreated, "POST", "/api/v1/subscriptions", map[string]any{"url": rc.URL, "events": []string{"run.succeeded"}}).decode(t, &sub)
		c.register(t, `{"id": "quick", "version": "1", "steps": [{"type": "task", "name": "work", "handler": "sleepFor", "config": {"ms": 1}}]}`)
		run := c.startRun(t, "quick", nil)
		var d delivery
		select {
		case d = <-got:
		case <-time.After(20 * time.Second):
			t.Fatal("no delivery within 20s")
		}
		if err := hook.Verify([]byte(sub.Secret), d.header.Get(hook.SignatureHeader), d.body, time.Now(), time.Minute); err != nil {
			t.Fatalf("signature %q: %v", d.header.Get(hook.SignatureHeader), err)
		}
		var ev struct {
			Type string
			Data struct{ ID, Status, URL string }
		}
		if err := json.Unmarshal(d.body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != "run.succeeded" || ev.Data.ID != run.ID || ev.Data.Status != "succeeded" || ev.Data.URL != "https://tollgate.example.com/runs/"+run.ID {
			t.Errorf("delivery = %s", d.body)
		}
		// The attempt is counted in /metrics.
		const sent = `tollgate_notifications_total{channel="webhook",outcome="sent"} 1` + "\n"
		deadline := time.Now().Add(10 * time.Second)
		for m := ""; !strings.Contains(m, sent); m = string(c.call(t, http.StatusOK, "GET", "/metrics", nil).Body) {
			if time.Now().After(deadline) {
				t.Fatalf("/metrics does not count the delivery:\n%s", m)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
