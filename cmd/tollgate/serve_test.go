package main

import (
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
			s := startServer(t, nil, tt.args...)
			if err := s.stop(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(s.Stderr.String(), warning); got != tt.warn {
				t.Errorf("warned %v, want %v; stderr:\n%s", got, tt.warn, s.Stderr)
			}
		})
	}
}
