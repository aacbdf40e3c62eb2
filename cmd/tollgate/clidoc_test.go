package main

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli.md from the commands")

// docs/cli.md, the CLI's reference, is generated from the commands
// themselves (kong's model), so the two cannot drift: a command or flag
// added, renamed or given another default fails this test until the page
// is regenerated (make generate).
func TestCLIReference(t *testing.T) {
	const path = "../../docs/cli.md"
	want := cliReference(t)
	got, err := os.ReadFile(path)
	if string(got) == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/cli.md differs from the commands (%v); run make generate", err)
}

// cliReference is the page: every command, depth first, with its
// arguments and flags, each flag with its variable and default.
func cliReference(t *testing.T) string {
	var c cli
	parser, err := kong.New(&c, kong.Name("tollgate"), flagDefaults())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`# The tollgate command

<!-- generated from the commands themselves: make generate -->

The one binary is the server (` + "`serve`" + `), its administration on the database
(` + "`migrate`, `user add`, `apikey create`, `seed`, `backup`" + `) and a client of a
server's API (the rest). Every flag that names a variable can be set by it
instead; a flag on the command line wins. Exit statuses: 0 done, 1 refused
or failed, 2 usage, 3 not found, 4 conflict.

Every command also takes ` + "`--help`" + ` and ` + "`--version`" + `.
`)
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		if n.Hidden {
			return
		}
		if n.Type == kong.CommandNode && n.Leaf() {
			b.WriteString("\n## tollgate " + n.Path() + "\n\n`tollgate " + n.Summary() + "`\n\n" + markdownText.Replace(n.Help) + "\n")
			if len(n.Positional) > 0 {
				b.WriteString("\n| argument | what it is |\n|---|---|\n")
				for _, p := range n.Positional {
					b.WriteString("| `" + p.Summary() + "` | " + markdownText.Replace(p.Help) + " |\n")
				}
			}
			var flags []*kong.Flag
			for _, f := range n.Flags {
				if !f.Hidden {
					flags = append(flags, f)
				}
			}
			if len(flags) > 0 {
				b.WriteString("\n| flag | variable | default | what it sets |\n|---|---|---|---|\n")
				for _, f := range flags {
					name := "--" + f.Name
					if f.Short != 0 {
						name = "-" + string(f.Short) + ", " + name
					}
					variable, def := "", "`"+f.Default+"`"
					if len(f.Envs) > 0 {
						variable = "`" + f.Envs[0] + "`"
					}
					if f.Default == "" {
						def = ""
					}
					b.WriteString("| `" + name + "` | " + variable + " | " + def + " | " + markdownText.Replace(f.Help) + " |\n")
				}
			}
		}
		for _, child := range n.Children {
			walk(child)
		}
	}
	walk(parser.Model.Node)
	return b.String()
}
