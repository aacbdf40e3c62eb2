package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// A public URL that defaults to an unspecified listen host (0.0.0.0, ::)
// is not one callers can use: serve warns at start, and only then.
func TestPublicURLOnAnUnspecifiedHost(t *testing.T) {
	t.Parallel()
	const warning = "--public-url is not set"
	for _, tt := range []struct {
		name string
		args []string
		warn bool
	}{
		{"0.0.0.0", []string{"--addr", "0.0.0.0:0"}, true},
		{"every address", []string{"--addr", ":0"}, true},
		{"loopback", nil, false},
		{"0.0.0.0 with a public URL", []string{"--addr", "0.0.0.0:0", "--public-url", "https://flows.example.com"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkStartWarning(t, tt.args, warning, tt.warn)
		})
	}
}

var metricsLine = regexp.MustCompile(`Metrics: (http://\S+/metrics)`)

func getStatus(t *testing.T, url string, headers ...string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// --metrics-addr serves /metrics there and only there; --metrics-token
// makes it require the token.
func TestMetricsAddrAndToken(t *testing.T) {
	t.Parallel()
	t.Run("own address", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, nil, "--metrics-addr", "127.0.0.1:0")
		m := metricsLine.FindStringSubmatch(s.Stdout.String())
		if m == nil {
			t.Fatalf("stdout names no metrics address:\n%s", s.Stdout)
		}
		if got := getStatus(t, m[1]); got != http.StatusOK {
			t.Errorf("GET %s = %d", m[1], got)
		}
		if got := getStatus(t, s.URL+"/metrics"); got != http.StatusNotFound {
			t.Errorf("GET /metrics on the main listener = %d, want 404", got)
		}
		if got := getStatus(t, strings.TrimSuffix(m[1], "/metrics")+"/healthz"); got != http.StatusNotFound {
			t.Errorf("GET /healthz on the metrics listener = %d, want 404", got)
		}
	})
	t.Run("token", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, map[string]string{"TOLLGATE_METRICS_TOKEN": "scrape-token-0123456789"})
		if got := getStatus(t, s.URL+"/metrics"); got != http.StatusUnauthorized {
			t.Errorf("GET /metrics without the token = %d, want 401", got)
		}
		if got := getStatus(t, s.URL+"/metrics", "Authorization", "Bearer scrape-token-0123456789"); got != http.StatusOK {
			t.Errorf("GET /metrics with the token = %d, want 200", got)
		}
	})
	t.Run("short token", func(t *testing.T) {
		t.Parallel()
		err := run(t.Context(), []string{"serve", "--data", t.TempDir(), "--metrics-token", "short"}, envFunc(nil), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--metrics-token") {
			t.Errorf("serve --metrics-token short returned %v", err)
		}
	})
}

// Metrics open to other machines are warned about at start; loopback, a
// token or an own address keeps serve quiet.
func TestPublicMetricsWarning(t *testing.T) {
	t.Parallel()
	const warning = "/metrics is served without a token"
	for _, tt := range []struct {
		name string
		args []string
		warn bool
	}{
		{"every address", []string{"--addr", "0.0.0.0:0"}, true},
		{"loopback", nil, false},
		{"token", []string{"--addr", "0.0.0.0:0", "--metrics-token", "scrape-token-0123456789"}, false},
		{"own address", []string{"--addr", "0.0.0.0:0", "--metrics-addr", "127.0.0.1:0"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkStartWarning(t, tt.args, warning, tt.warn)
		})
	}
}

// checkStartWarning starts and stops a server with args and checks that it
// warned (or did not) with a line holding warning.
func checkStartWarning(t *testing.T, args []string, warning string, want bool) {
	t.Helper()
	s := startServer(t, nil, args...)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Contains(s.Stderr.String(), warning); got != want {
		t.Errorf("warned %v, want %v; stderr:\n%s", got, want, s.Stderr)
	}
}
