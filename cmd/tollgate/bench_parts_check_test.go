//go:build bench

package main

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestBenchPartsSelection checks how TOLLGATE_BENCH picks the parts of
// make bench: all when unset, those named, the older TOLLGATE_BENCH_FLOWS
// in its place, and an error naming the parts for an unknown one.
func TestBenchPartsSelection(t *testing.T) {
	for _, tc := range []struct {
		bench, flows string
		want         []string
		err          string
	}{
		{want: benchPartNames},
		{bench: "kernel,herd", want: []string{"kernel", "herd"}},
		{bench: " herd , ", want: []string{"herd"}},
		{flows: "trips,hooks", want: []string{"trips", "hooks"}},
		{bench: "kernel", flows: "herd", want: []string{"kernel"}},
		{bench: "kernel,kernal", err: `unknown part "kernal"; the parts are kernel, herd, peers, trips, hooks, replay, web, mail, slack, schedules, upload, policies, servers`},
	} {
		t.Setenv("TOLLGATE_BENCH", tc.bench)
		t.Setenv("TOLLGATE_BENCH_FLOWS", tc.flows)
		got, err := benchSelection()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("TOLLGATE_BENCH=%q: error %v, want one containing %q", tc.bench, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("TOLLGATE_BENCH=%q TOLLGATE_BENCH_FLOWS=%q: %v %v, want %v", tc.bench, tc.flows, got, err, tc.want)
		}
	}
}

// TestBenchLineFormat checks the figures of a BENCH line: one decimal (two
// for a ratio), written even when it is zero, never -0, and null for what
// could not be measured.
func TestBenchLineFormat(t *testing.T) {
	b, err := json.Marshal(struct {
		Name  string `json:"name"`
		A     fig    `json:"a"`
		B     fig    `json:"b"`
		C     fig    `json:"c"`
		D     fig    `json:"d"`
		Ratio ratio  `json:"ratio"`
	}{"kernel", 12, 1234.46, -0.04, fig(math.NaN()), 0.2549})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"kernel","a":12.0,"b":1234.5,"c":0.0,"d":null,"ratio":0.25}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
