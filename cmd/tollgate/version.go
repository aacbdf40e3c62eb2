package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// version and commit are set by `make release` (-ldflags "-X
// main.version=v1.2.3 -X main.commit=…"); otherwise the build info says
// what was built.
var version, commit string

// buildInfo is what `tollgate version` tells.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// readBuildInfo reads the version stamped at build time: the release's
// (main.version), the module's when built with `go install …@v1.2.3`, or
// "devel" with the commit when built from a checkout.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		b.Version = cmp.Or(b.Version, "devel")
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	b.Version = cmp.Or(b.Version, "devel")
	return b
}

// short is the version as one word, for the start-up line, /healthz and
// the pages' footer: v1.2.3, or devel+abc1234 (with .dirty for a checkout
// with changes).
func (b buildInfo) short() string {
	if b.Version != "devel" || b.Commit == "" {
		return b.Version
	}
	s := "devel+" + b.Commit[:min(len(b.Commit), 12)]
	if b.Modified {
		s += ".dirty"
	}
	return s
}

// printVersion prints the version for people, or as JSON.
func printVersion(asJSON bool, stdout io.Writer) error {
	b := readBuildInfo()
	if asJSON {
		return json.NewEncoder(stdout).Encode(b)
	}
	parts := []string{b.Go, b.Platform}
	if b.Commit != "" {
		parts = append([]string{"commit " + b.Commit[:min(len(b.Commit), 12)]}, parts...)
	}
	_, err := fmt.Fprintf(stdout, "tollgate %s (%s)\n", b.short(), strings.Join(parts, ", "))
	return err
}
