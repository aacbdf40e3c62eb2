package main

import (
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
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
// default and meaning, in the order of their names.
func configReference(t *testing.T) string {
	var fs *flag.FlagSet
	f := newFlags("tollgate serve", func(string) string { return "" }, io.Discard)
	fs = f.fs
	if _, err := parseServeWith(f, nil); err != nil {
		t.Fatal(err)
	}
	env := regexp.MustCompile(` \(\$([A-Z_]+)\)$`)
	var b strings.Builder
	b.WriteString("| flag | variable | default | what it sets |\n|---|---|---|---|\n")
	fs.VisitAll(func(fl *flag.Flag) {
		usage, variable := fl.Usage, ""
		if m := env.FindStringSubmatchIndex(usage); m != nil {
			usage, variable = usage[:m[0]], "`"+usage[m[2]:m[3]]+"`"
		}
		def := "`" + fl.DefValue + "`"
		if fl.DefValue == "" {
			def = "unset"
		}
		b.WriteString("| `--" + fl.Name + "` | " + variable + " | " + def + " | " + markdownText.Replace(usage) + " |\n")
	})
	return b.String()
}
