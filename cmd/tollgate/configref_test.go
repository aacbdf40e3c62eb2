package main

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated parts of docs/ (the configuration and CLI references)")

// checkGenerated holds the part of the page at path between the lines
// begin and end to want, which is generated from the code: a test fails
// until the page is regenerated (make generate, which passes
// -update-docs), so the page and the code cannot drift.
func checkGenerated(t *testing.T, path, begin, end, want string) {
	t.Helper()
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end = begin+"\n", end+"\n"
	i, j := strings.Index(string(page), begin), strings.Index(string(page), end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers of its generated part:\n%s%s", path, begin, end)
	}
	if got := string(page[i+len(begin) : j]); got == want {
		return
	}
	if *updateDocs {
		out := string(page[:i+len(begin)]) + want + string(page[j:])
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's generated part differs from the code; run make generate. Want:\n%s", path, want)
}

// The configuration reference (docs/configuration.md) is generated from
// the flag definitions of tollgate serve: a flag added, renamed or given
// another default fails this test until the page is regenerated.
func TestConfigurationReference(t *testing.T) {
	checkGenerated(t, "../../docs/configuration.md",
		"<!-- generated from the flags of tollgate serve: make generate -->", "<!-- end of the generated reference -->",
		configReference(t))
}

// markdownText keeps a flag's help as written inside a Markdown table.
var markdownText = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`)

// configReference is the table of serve's flags: each with its variable,
// default and meaning, in the order of their names, as kong has them.
func configReference(t *testing.T) string {
	var c cli
	parser, err := kong.New(&c, kong.Name("tollgate"), flagDefaults())
	if err != nil {
		t.Fatal(err)
	}
	var serve *kong.Node
	for _, n := range parser.Model.Children {
		if n.Name == "serve" {
			serve = n
		}
	}
	if serve == nil {
		t.Fatal("no serve command")
	}
	flags := slices.Clone(serve.Flags)
	slices.SortFunc(flags, func(a, b *kong.Flag) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteString("| flag | variable | default | what it sets |\n|---|---|---|---|\n")
	for _, fl := range flags {
		variable := ""
		if len(fl.Envs) > 0 {
			variable = "`" + fl.Envs[0] + "`"
		}
		def := "`" + fl.Default + "`"
		switch {
		case fl.Default == "" && fl.IsBool():
			def = "`false`"
		case fl.Default == "":
			def = "unset"
		}
		b.WriteString("| `--" + fl.Name + "` | " + variable + " | " + def + " | " + markdownText.Replace(fl.Help) + " |\n")
	}
	return b.String()
}
