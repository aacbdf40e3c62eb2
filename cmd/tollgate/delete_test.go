package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A sync resume waiting for its run hears that an admin deleted the run,
// and answers 404 at once rather than an error or a 202 at its timeout.
func TestDeleteRunDuringSyncResume(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		s := startServer(t, env, "--sync-timeout", "10s")
		c := s.client()
		c.register(t, `{"id": "doomed", "version": "1", "steps": [
			{"type": "webhook", "name": "go"}, {"type": "task", "name": "work", "handler": "sleepFor", "config": {"ms": 3000}}]}`)
		run := c.startRun(t, "doomed", nil)
		resumeURL := c.waitStatus(t, run.ID, "suspended").Suspensions[0].ResumeURL

		type answer struct {
			status int
			body   string
			after  time.Duration
		}
		answered := make(chan answer, 1)
		go func() {
			start := time.Now()
			resp, err := http.Post(syncURL(resumeURL), "application/json", strings.NewReader(`{}`))
			if err != nil {
				answered <- answer{body: err.Error()}
				return
			}
			defer resp.Body.Close()
			var p struct{ Code string }
			_ = json.NewDecoder(resp.Body).Decode(&p)
			answered <- answer{resp.StatusCode, p.Code, time.Since(start)}
		}()
		c.waitStatus(t, run.ID, "running") // resumed; its next step sleeps
		c.call(t, http.StatusNoContent, "DELETE", "/api/v1/runs/"+run.ID, map[string]string{"reason": "test"})
		if a := <-answered; a.status != http.StatusNotFound || a.body != "not_found" || a.after >= 10*time.Second {
			t.Errorf("the sync resume answered %d %s after %v; want 404 not_found at once", a.status, a.body, a.after)
		}
	})
}
