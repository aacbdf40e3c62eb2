package views

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The committed *_templ.go files are what `go tool templ generate`, run from
// the repository root (make generate), makes of the *.templ files: a
// component edited without regenerating fails here.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	files, err := filepath.Glob("*.templ")
	if err != nil || len(files) == 0 {
		t.Fatalf("no templ files: %v", err)
	}
	for _, f := range files {
		cmd := exec.Command("go", "tool", "templ", "generate", "-stdout", "-f", filepath.Join("views", f))
		cmd.Dir = ".."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("templ generate %s: %v", f, err)
		}
		committed, err := os.ReadFile(strings.TrimSuffix(f, ".templ") + "_templ.go")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, committed) {
			t.Errorf("%s_templ.go is not what templ generates from %s: run make generate", strings.TrimSuffix(f, ".templ"), f)
		}
	}
}
