package main

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

// `tollgate version` says what was built, for people and as JSON; the
// server shows the same version in its start-up line and /healthz.
func TestVersion(t *testing.T) {
	var out, errb syncBuffer
	if err := run(t.Context(), []string{"version"}, envFunc(nil), &out, &errb); err != nil {
		t.Fatal(err)
	}
	want := readBuildInfo()
	if !strings.HasPrefix(out.String(), "tollgate "+want.short()+" (") || !strings.Contains(out.String(), want.Go) {
		t.Errorf("version printed %q", out.String())
	}
	out = syncBuffer{}
	if err := run(t.Context(), []string{"version", "--json"}, envFunc(nil), &out, &errb); err != nil {
		t.Fatal(err)
	}
	var got buildInfo
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil || got != want || got.Version == "" || got.Platform == "" {
		t.Errorf("version --json = %q (%v); want %+v", out.String(), err, want)
	}
	if err := run(t.Context(), []string{"version", "extra"}, envFunc(nil), &out, &errb); err == nil {
		t.Error("version with an argument succeeded")
	}

	s := startServer(t, nil, "--log-level", "info")
	var health struct{ Status, Version string }
	s.client().call(t, http.StatusOK, "GET", "/healthz", nil).decode(t, &health)
	if health.Status != "ok" || health.Version != want.short() {
		t.Errorf("/healthz = %+v; want version %s", health, want.short())
	}
	line := regexp.MustCompile(`msg="Tollgate started" version=(\S+) addr=(\S+) database=sqlite workflows=(\d+) pending_timers=0`).FindStringSubmatch(s.Stderr.String())
	if line == nil || line[1] != want.short() || "http://"+line[2] != s.URL || line[3] == "0" {
		t.Fatalf("no start-up line with version, address, database, workflows and timers:\n%s", s.Stderr)
	}
	// The configuration page quotes the line: with as many workflows as ship.
	readme, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if quoted := regexp.MustCompile(`database=sqlite\s+workflows=(\d+)`).FindSubmatch(readme); quoted == nil || string(quoted[1]) != line[3] {
		t.Errorf("docs/configuration.md quotes the start-up line with %q workflows; the server starts with %s", quoted, line[3])
	}
}

func TestBuildInfoShort(t *testing.T) {
	for _, tc := range []struct {
		b    buildInfo
		want string
	}{
		{buildInfo{Version: "v1.2.3", Commit: "abcdef0123456789"}, "v1.2.3"},
		{buildInfo{Version: "devel"}, "devel"},
		{buildInfo{Version: "devel", Commit: "abcdef0123456789"}, "devel+abcdef012345"},
		{buildInfo{Version: "devel", Commit: "abcdef0123456789", Modified: true}, "devel+abcdef012345.dirty"},
	} {
		if got := tc.b.short(); got != tc.want {
			t.Errorf("%+v.short() = %q; want %q", tc.b, got, tc.want)
		}
	}
}
