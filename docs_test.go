package tollgate_test

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// manual is the README and every page of docs/, by path from the
// repository's root, with their text.
func manual(t *testing.T) map[string]string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range append(pages, "README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(b)
	}
	return out
}

// prose is a page's lines outside its fenced blocks, each with its number
// (from 1); fenced lines are empty strings.
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// anchors are the ids a page's headings get where the manual is read
// (GitHub): in lower case, without punctuation, spaces as hyphens, and a
// number after a repeated one.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, l := range prose(text) {
		heading, ok := strings.CutPrefix(l, "#")
		if !ok {
			continue
		}
		heading = strings.TrimLeft(heading, "#")
		var id strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
			switch {
			case r == ' ':
				id.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				id.WriteRune(r)
			}
		}
		a := id.String()
		for n := 1; out[a]; n++ {
			a = id.String() + "-" + string(rune('0'+n))
		}
		out[a] = true
	}
	return out
}

var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every link between the manual's pages leads somewhere: to a file of the
// repository, and to a heading of that page when it names one. The README
// stays a front page, at most 200 lines, and links to every page of docs/.
func TestManualLinks(t *testing.T) {
	pages := manual(t)
	for page, text := range pages {
		for n, l := range prose(text) {
			for _, m := range markdownLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = path.Join(path.Dir(page), file)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: %s leads to no file (%v)", page, n+1, target, err)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				text, ok := pages[dest]
				if !ok {
					t.Errorf("%s:%d: %s names a heading of %s, which is not a page of the manual", page, n+1, target, dest)
					continue
				}
				if !anchors(text)[anchor] {
					t.Errorf("%s:%d: %s has no heading #%s", page, n+1, dest, anchor)
				}
			}
		}
	}
	readme := pages["README.md"]
	if n := strings.Count(readme, "\n"); n > 200 {
		t.Errorf("README.md has %d lines; the front page keeps to 200 and links to docs/", n)
	}
	for page := range pages {
		if page != "README.md" && !strings.Contains(readme, "("+page+")") {
			t.Errorf("README.md does not link to %s", page)
		}
	}
}

var updateDocs = flag.Bool("update-docs", false, "rewrite the manual's Go blocks from the code they show")

// goSource marks a ```go block of the manual with the code it shows:
// "<!-- go: FILE -->" for a whole file, "<!-- go: FILE NAME -->" for one
// function of it (an Example's body, as go doc shows it).
var goSource = regexp.MustCompile(`^<!-- go: (\S+)(?: (\S+))? -->$`)

// Every Go block of the manual is code that is built: a file of the
// repository, a function of one, or an Example's body, which go test
// compiles (and runs, when it has an Output). The block must be that code
// as it is, so the manual cannot show code that no longer compiles.
func TestManualGoBlocks(t *testing.T) {
	blocks := 0
	for page, text := range manual(t) {
		lines := strings.Split(text, "\n")
		changed := false
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "```go" {
				continue
			}
			blocks++
			var src []string
			if i > 0 {
				src = goSource.FindStringSubmatch(strings.TrimSpace(lines[i-1]))
			}
			if src == nil {
				t.Errorf("%s:%d: a Go block without the source it shows (<!-- go: FILE [FUNC] --> on the line before)", page, i+1)
				continue
			}
			end := i + 1
			for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
				end++
			}
			want := strings.Trim(goCode(t, src[1], src[2]), "\n")
			if got := strings.Join(lines[i+1:end], "\n"); got == want {
				continue
			}
			if !*updateDocs {
				t.Errorf("%s:%d: the block differs from %s %s; run make generate", page, i+1, src[1], src[2])
				continue
			}
			lines = append(lines[:i+1], append(strings.Split(want, "\n"), lines[end:]...)...)
			changed = true
		}
		if changed {
			if err := os.WriteFile(page, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if blocks < 5 {
		t.Errorf("the manual has %d Go blocks; the pages on writing workflows show theirs", blocks)
	}
}

// goCode is the code at file (from the repository's root): the whole
// file, or the function name as written, or an Example function's body
// with one indentation fewer.
func goCode(t *testing.T, file, name string) string {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if name == "" {
		return string(text)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, text, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != name {
			continue
		}
		if !strings.HasPrefix(name, "Example") {
			return string(text[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset])
		}
		body := text[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset]
		var out []string
		for _, l := range strings.Split(strings.Trim(string(body), "\n"), "\n") {
			out = append(out, strings.TrimPrefix(l, "\t"))
		}
		return strings.Join(out, "\n")
	}
	t.Fatalf("%s has no function %s", file, name)
	return ""
}
