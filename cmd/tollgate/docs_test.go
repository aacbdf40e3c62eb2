package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// commandEnv makes this test binary run as the tollgate command itself
// (see TestMain), so that the manual's shell examples call the code under
// test without a separate build.
const commandEnv = "TOLLGATE_TEST_AS_COMMAND"

// A shell example the manual marks as runnable: the line before its ```sh
// block is "<!-- docs-test -->", or "<!-- docs-test sqlite -->" (or
// postgres) for an example of one database only. Lines right after the
// block of the form "<!-- says: TEXT -->" are what its output must hold,
// in that order.
var (
	docsTestMarker = regexp.MustCompile(`^<!-- docs-test( sqlite| postgres)? -->$`)
	docsSaysMarker = regexp.MustCompile(`^<!-- says: (.+) -->$`)
)

type shellExample struct {
	line int    // of the block's first line, from 1
	only string // "sqlite" or "postgres" for one database; "" for both
	code string
	says []string
}

// shellExamples returns the page's marked ```sh blocks, in order.
func shellExamples(t *testing.T, page, text string) []shellExample {
	t.Helper()
	var out []shellExample
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := docsTestMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			if strings.Contains(lines[i], "docs-test") && !strings.Contains(lines[i], "`") {
				t.Fatalf("%s:%d: a docs-test marker this test cannot read: %s", page, i+1, lines[i])
			}
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			t.Fatalf("%s:%d: %s is not followed by a ```sh block", page, i+1, lines[i])
		}
		ex := shellExample{line: i + 3, only: strings.TrimSpace(m[1])}
		var code []string
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			code = append(code, lines[i])
		}
		ex.code = strings.Join(code, "\n")
		for i+1 < len(lines) {
			s := docsSaysMarker.FindStringSubmatch(strings.TrimSpace(lines[i+1]))
			if s == nil {
				break
			}
			ex.says = append(ex.says, s[1])
			i++
		}
		out = append(out, ex)
	}
	return out
}

// manualPages are the README and every page of docs/, as paths from the
// repository's root.
func manualPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, p := range pages {
		out = append(out, strings.TrimPrefix(p, "../../"))
	}
	return out
}

// The manual's shell examples work as written, on both databases: each
// page's marked ```sh blocks run one after another in one bash, with set
// -euo pipefail, against a server on a fresh database (with the manual's
// bootstrap key and, on PostgreSQL, DATABASE_URL set for the commands
// that open the database), with the tollgate command on PATH, in a folder
// whose ./data is the server's. Only the address (127.0.0.1:8080) is
// changed, to the server's. Each block must succeed and say what its
// page says it does, a refusal included.
func TestDocsShellExamples(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the manual's examples need %s: %v", tool, err)
		}
	}
	examples := map[string][]shellExample{}
	total := 0
	for _, page := range manualPages(t) {
		text, err := os.ReadFile("../../" + page)
		if err != nil {
			t.Fatal(err)
		}
		examples[page] = shellExamples(t, page, string(text))
		total += len(examples[page])
	}
	if len(examples["README.md"]) == 0 || total < 8 {
		t.Fatalf("only %d shell examples are marked runnable (%d in the README)", total, len(examples["README.md"]))
	}
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		dialect := "sqlite"
		if env["DATABASE_URL"] != "" {
			dialect = "postgres"
		}
		for _, page := range manualPages(t) {
			var blocks []shellExample
			for _, ex := range examples[page] {
				if ex.only == "" || ex.only == dialect {
					blocks = append(blocks, ex)
				}
			}
			if len(blocks) == 0 {
				continue
			}
			t.Run(strings.TrimSuffix(filepath.Base(page), ".md"), func(t *testing.T) {
				runShellExamples(t, page, blocks, cloneEnv(env))
			})
		}
	})
}

// runShellExamples runs one page's examples against a fresh server.
func runShellExamples(t *testing.T, page string, blocks []shellExample, env map[string]string) {
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
	env["TOLLGATE_BOOTSTRAP_API_KEY"] = "tg_local_development_key_01"
	s := startServer(t, env, "--data", filepath.Join(work, "data"))
	addr := strings.TrimPrefix(s.URL, "http://")

	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, b := range blocks {
		script.WriteString("echo '=== block " + strconv.Itoa(i) + "'\n")
		script.WriteString(strings.ReplaceAll(b.code, "127.0.0.1:8080", addr) + "\necho\n")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8"}
	if url := env["DATABASE_URL"]; url != "" {
		cmd.Env = append(cmd.Env, "DATABASE_URL="+url)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s's examples failed: %v\n%s", page, err, out.String())
	}
	said := out.String()
	for i, b := range blocks {
		start := strings.Index(said, "=== block "+strconv.Itoa(i)+"\n")
		end := len(said)
		if next := strings.Index(said, "=== block "+strconv.Itoa(i+1)+"\n"); next >= 0 {
			end = next
		}
		part, at := said[start:end], 0
		for _, want := range b.says {
			j := strings.Index(part[at:], want)
			if j < 0 {
				t.Errorf("%s:%d: the example did not say %s (after what came before it); it said:\n%s", page, b.line, want, part)
				break
			}
			at += j + len(want)
		}
	}
}
