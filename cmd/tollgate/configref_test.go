package main

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the README's configuration reference from the flags")

// The README's configuration reference is generated from the flag
// definitions of tollgate serve, so the two cannot drift: a flag added,
// renamed or given another default fails this test until the README is
// regenerated (make generate).
func TestConfigurationReference(t *testing.T) {
	const begin, end = "<!-- generated from the flags of tollgate serve: make generate -->\n", "<!-- end of the generated reference -->\n"
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(string(readme), begin), strings.Index(string(readme), end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the markers of the configuration reference:\n%s%s", begin, end)
	}
	want := begin + configReference(t) + end
	if got := string(readme[i : j+len(end)]); got != want {
		if *updateReadme {
			out := string(readme[:i]) + want + string(readme[j+len(end):])
			if err := os.WriteFile("../../README.md", []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("README.md's configuration reference differs from the flags; run make generate. Want:\n%s", want)
	}
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
