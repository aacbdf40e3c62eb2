package main

import (
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// The CLI's reference (docs/cli.md, below the page's own introduction) is
// generated from the commands themselves (kong's model): a command or flag
// added, renamed or given another default fails this test until the page
// is regenerated (make generate).
func TestCLIReference(t *testing.T) {
	checkGenerated(t, "../../docs/cli.md",
		"<!-- generated from the commands themselves: make generate -->", "<!-- end of the generated reference -->",
		cliReference(t))
}

// cliReference is the reference: every command, depth first, with its
// arguments and flags, each flag with its variable and default.
func cliReference(t *testing.T) string {
	var c cli
	parser, err := kong.New(&c, kong.Name("tollgate"), flagDefaults())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		if n.Hidden {
			return
		}
		if n.Type == kong.CommandNode && n.Leaf() {
			b.WriteString("\n### tollgate " + n.Path() + "\n\n`tollgate " + n.Summary() + "`\n\n" + markdownText.Replace(n.Help) + "\n")
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
