package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// commandEnv makes this test binary run as the tollgate command itself
// (see TestMain), so that the README's shell examples call the code under
// test without a separate build.
const commandEnv = "TOLLGATE_TEST_AS_COMMAND"

// readmeMarker goes on the line before a ```sh block of the README that
// TestREADMEShellExamples runs.
const readmeMarker = "<!-- readme-test -->"

// readmeBlocks returns the README's ```sh blocks marked readmeMarker, in
// order.
func readmeBlocks(t *testing.T, readme string) []string {
	t.Helper()
	var blocks []string
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != readmeMarker {
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			t.Fatalf("README line %d: %s is not followed by a ```sh block", i+1, readmeMarker)
		}
		var block []string
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			block = append(block, lines[i])
		}
		blocks = append(blocks, strings.Join(block, "\n"))
	}
	return blocks
}

// The README's shell examples work as written: the marked ```sh blocks
// run one after another in one bash, with set -euo pipefail, against a
// server on a fresh embedded database with the README's bootstrap key,
// and with the tollgate command on PATH, in a folder whose ./data is the
// server's. Only the address (127.0.0.1:8080) is changed, to the
// server's. Each block must succeed and answer what the README says it
// does, a refusal included: bad input is a problem with a stable code.
func TestREADMEShellExamples(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's examples need %s: %v", tool, err)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, string(readme))
	if len(blocks) == 0 {
		t.Fatal("no README block is marked " + readmeMarker)
	}

	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\n" + commandEnv + "=1 exec " + strconv.Quote(self) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "tollgate"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, map[string]string{"TOLLGATE_BOOTSTRAP_API_KEY": "tg_local_development_key_01"}, "--data", filepath.Join(work, "data"))
	addr := strings.TrimPrefix(s.URL, "http://")

	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, b := range blocks {
		script.WriteString("echo '=== block " + strconv.Itoa(i+1) + "'\n")
		script.WriteString(strings.ReplaceAll(b, "127.0.0.1:8080", addr) + "\necho\n")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's examples failed: %v\n%s", err, out.String())
	}
	t.Logf("the README's examples said:\n%s", out.String())

	// What each example shows, in the order the README shows it.
	said := out.String()
	at := 0
	for _, want := range []string{
		`"code":"unknown_document"`,                            // a made-up document id is refused with its code
		`"field":"/resumeData/documentIds/0"`,                  // and the field
		`"status":"suspended"`,                                 // the claim waits for its documents
		`"type":"WORKFLOW_PAUSED"`,                             // and its log says so
		`"decision":"approved"`,                                // the expense approved
		`"tally":{"approvals":1,`,                              // the payout's first vote
		`"tally":{"approvals":2,`,                              // and its second, which resolves it
		`"status":"completed"`,                                 // the bank's call on the resume URL
		`"secret":"`,                                           // the subscription made, with its secret once
		`"description":"Every weekday at 09:00 Europe/Lisbon"`, // a schedule, its rule in words
		`Next fires:`,                                          // and its next fires
		`Backed up data/tollgate.db to backups/tollgate-`,      // the backup, its folder made
		`"code":"not_found"`,                                   // the deleted run is gone
		`"action": "run.delete"`,                               // and the audit log says who deleted it
		`"reason": "Erasure request #42"`,                      // and why
	} {
		i := strings.Index(said[at:], want)
		if i < 0 {
			t.Errorf("the README's examples did not say %s (after what came before it)", want)
			continue
		}
		at += i + len(want)
	}
}
