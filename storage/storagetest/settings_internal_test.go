package storagetest

import (
	"slices"
	"testing"
)

// TestServerSettingsPgStats checks that TOLLGATE_BENCH_PGSTATS, and only it,
// loads pg_stat_statements into the throwaway server.
func TestServerSettingsPgStats(t *testing.T) {
	preload := "shared_preload_libraries=pg_stat_statements"
	unset := serverSettings(func(string) string { return "" })
	if slices.Contains(unset, preload) {
		t.Errorf("without TOLLGATE_BENCH_PGSTATS the server loads pg_stat_statements: %q", unset)
	}
	if !slices.Contains(unset, "fsync=off") {
		t.Errorf("the server's own settings are missing: %q", unset)
	}
	set := serverSettings(func(k string) string {
		if k == "TOLLGATE_BENCH_PGSTATS" {
			return "1"
		}
		return ""
	})
	if !slices.Contains(set, preload) || !slices.Contains(set, "pg_stat_statements.track=all") {
		t.Errorf("with TOLLGATE_BENCH_PGSTATS the server does not load and track pg_stat_statements: %q", set)
	}
	if want := append(slices.Clone(unset), "-c", preload, "-c", "pg_stat_statements.track=all",
		"-c", "pg_stat_statements.track_planning=on"); !slices.Equal(set, want) {
		t.Errorf("with TOLLGATE_BENCH_PGSTATS the settings are %q, want %q", set, want)
	}
}
