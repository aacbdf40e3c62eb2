package tollgate_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tollgatehq/tollgate"

// TestArchitecture holds the rules of the house that ARCHITECTURE.md
// names, on the packages' own imports (tests left out).
func TestArchitecture(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		imports[strings.TrimPrefix(f[0], module)] = f[1:]
	}
	for _, room := range []string{"/web", "/web/api", "/web/ui"} {
		if _, ok := imports[room]; !ok {
			t.Errorf("there is no package %s", module+room)
		}
	}
	// pureHelpers are what domain may import besides the standard library.
	pureHelpers := []string{"github.com/go-json-experiment/json", "github.com/robfig/cron/v3", "github.com/google/uuid"}
	for pkg, imps := range imports {
		for _, imp := range imps {
			own, ours := strings.CutPrefix(imp, module)
			switch {
			case under(pkg, "/domain") && ours && !under(own, "/domain"):
				t.Errorf("%s imports %s: domain imports nothing of Tollgate outside domain/", pkg, imp)
			case under(pkg, "/domain") && !ours && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") &&
				!slices.ContainsFunc(pureHelpers, func(h string) bool { return under(imp, h) }):
				t.Errorf("%s imports %s: domain imports the standard library and %v only", pkg, imp, pureHelpers)
			case ours && under(own, "/storage") && (under(pkg, "/domain") || under(pkg, "/web") || under(pkg, "/views")):
				t.Errorf("%s imports %s: the kernel and the server see a database only through domain's interfaces", pkg, imp)
			case pkg == "/web/api" && own == "/web/ui", pkg == "/web/ui" && own == "/web/api":
				t.Errorf("%s imports %s: the API and the pages share only what is in web", pkg, imp)
			case pkg == "/web" && (own == "/web/api" || own == "/web/ui"):
				t.Errorf("%s imports %s: web takes its rooms as Handler's arguments", pkg, imp)
			case under(pkg, "/views") && ours && (under(own, "/web") || under(own, "/storage")):
				t.Errorf("%s imports %s: views read no data", pkg, imp)
			}
		}
	}
}

// under says whether the path pkg is dir or lies under it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }
