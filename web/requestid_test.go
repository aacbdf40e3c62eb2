package web_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// logBuffer is a log the server writes while the test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Every answer names its request's id, every problem carries it, and every
// log line the request leads to has it: a client's failure can be found in
// the log. A usable id the caller sends is kept; anything else is replaced.
func TestRequestIDs(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) {
		s.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	r := e.call(t, "GET", "/api/v1/runs/no-such-run", e.admin, "")
	id := r.Header.Get("X-Request-Id")
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) {
		t.Fatalf("X-Request-Id = %q; want a new id", id)
	}
	if p := decode[struct {
		RequestID string `json:"requestId"`
	}](t, r, http.StatusNotFound); p.RequestID != id {
		t.Errorf("the problem's requestId = %q; want %q", p.RequestID, id)
	}
	if got := e.call(t, "GET", "/healthz", "", "", "X-Request-Id", "lb-7f3a.2"); got.Header.Get("X-Request-Id") != "lb-7f3a.2" {
		t.Errorf("a proxy's id was not kept: %q", got.Header.Get("X-Request-Id"))
	}
	for _, bad := range []string{"<script>", strings.Repeat("a", 65), "two words"} {
		if got := e.call(t, "GET", "/healthz", "", "", "X-Request-Id", bad); got.Header.Get("X-Request-Id") == bad {
			t.Errorf("the id %q was echoed", bad)
		}
	}
	e.call(t, "GET", "/api/v1/runs", e.admin, "", "X-Request-Id", "trace-me-42")
	if !strings.Contains(logs.String(), "request_id=trace-me-42") {
		t.Errorf("no log line carries the request's id:\n%s", logs.String())
	}
}
