package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, serve exports traces over
// OTLP/HTTP: spans of the HTTP requests, of the steps its workers ran and
// of the transitions committed, carrying the run's id, flushed at
// shutdown at the latest.
func TestServeExportsTraces(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" {
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	s := startServer(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL})
	c := s.client()
	run := c.startRun(t, "claim-verification", map[string]any{"claimId": "c-1", "claimText": "We have 12 customers", "founderEmail": "ada@example.com"})
	c.waitStatus(t, run.ID, "suspended")
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	all := bytes.Join(bodies, nil)
	mu.Unlock()
	for _, want := range []string{run.ID, "run_id", "step verifyClaim", "transition start", "POST /api/v1/workflows/{workflowId}/runs", "tollgate"} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("the exported traces (%d requests) lack %q", len(bodies), want)
		}
	}
}
