package flow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tollgatehq/tollgate/domain"
)

// Display is how a step that waits (approval, input, webhook) is shown to
// people: a title template, a few fields and the human name of its
// reason. Its JSON Pointers resolve against {input, steps, checkpoint} of
// the run when the step pauses; the result is fixed with the suspension.
type Display struct {
	// Title is text with placeholders: "Expense: {/input/description}".
	// {{ and }} stand for literal braces.
	Title       string         `json:"title,omitempty"`
	Fields      []DisplayField `json:"fields,omitempty"`
	ReasonLabel string         `json:"reasonLabel,omitempty"`
}

// DisplayField is one field of a Display: Value is a JSON Pointer whose
// JSON value is shown under Label, formatted by Format.
type DisplayField struct {
	Label  string             `json:"label"`
	Value  string             `json:"value"`
	Format domain.FieldFormat `json:"format,omitempty"`
}

// displayRoots are what a display's pointers start with.
var displayRoots = []string{"input", "steps", "checkpoint"}

// piece is one part of a parsed title template: literal text, or a
// pointer (tokens unescaped) whose value is printed.
type piece struct {
	text   string
	tokens []string
}

// parseTemplate splits a title template into literal text and
// placeholders. A placeholder is {<JSON Pointer>}; {{ and }} are literal
// braces. A misplaced brace ends the parse; a placeholder that is not a
// JSON Pointer is left out and reported, and the parse goes on, so that
// every bad placeholder is reported at once. Positions in errors count
// characters from 1.
func parseTemplate(s string) ([]piece, []error) {
	var out []piece
	var errs []error
	var text strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "{{"), strings.HasPrefix(s[i:], "}}"):
			text.WriteByte(s[i])
			i++
		case s[i] == '}':
			return nil, append(errs, fmt.Errorf("the } at character %d closes no placeholder: write }} for a literal brace", charAt(s, i)))
		case s[i] == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, append(errs, fmt.Errorf("the { at character %d opens a placeholder that is never closed with }: write {{ for a literal brace", charAt(s, i)))
			}
			ptr := s[i+1 : i+end]
			i += end
			if ptr == "" {
				errs = append(errs, fmt.Errorf("the placeholder {} at character %d is empty: put a JSON Pointer in it, like {/input/amount}", charAt(s, i-end)))
				continue
			}
			tokens, err := domain.ParsePointer(ptr)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if text.Len() > 0 {
				out = append(out, piece{text: text.String()})
				text.Reset()
			}
			out = append(out, piece{tokens: tokens})
		default:
			text.WriteByte(s[i])
		}
	}
	if text.Len() > 0 {
		out = append(out, piece{text: text.String()})
	}
	return out, errs
}

func charAt(s string, i int) int { return utf8.RuneCountInString(s[:i]) + 1 }

// checkPointer reports a pointer that cannot lead anywhere in a run of
// the document: one into something other than input, steps or
// checkpoint, or into the output of a step the document does not have.
func checkPointer(p string, tokens []string, steps map[string]int) error {
	if !slices.Contains(displayRoots, tokens[0]) {
		return fmt.Errorf("%q starts at %q; a display pointer starts with /input, /steps or /checkpoint", p, tokens[0])
	}
	if tokens[0] == "steps" && len(tokens) > 1 {
		if _, ok := steps[tokens[1]]; !ok {
			return fmt.Errorf("%q names step %q, which this document does not have", p, tokens[1])
		}
	}
	return nil
}

// display checks a step's display: its title template, its fields'
// labels, pointers and formats. steps are the document's step names.
func (v *validator) display(path string, d Display, steps map[string]int) {
	pieces, errs := parseTemplate(d.Title)
	for _, pc := range pieces {
		if pc.tokens != nil {
			if err := checkPointer(pointerText(pc.tokens), pc.tokens, steps); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, err := range errs {
		v.add(path+".title", "%v", err)
	}
	for i, f := range d.Fields {
		at := fmt.Sprintf("%s.fields[%d]", path, i)
		if strings.TrimSpace(f.Label) == "" {
			v.add(at+".label", "a field needs a label, like Amount")
		}
		if f.Value == "" {
			v.add(at+".value", "a field's value is a JSON Pointer, like /input/amount")
		} else if tokens, err := domain.ParsePointer(f.Value); err != nil {
			v.add(at+".value", "%v", err)
		} else if err := checkPointer(f.Value, tokens, steps); err != nil {
			v.add(at+".value", "%v", err)
		}
		if err := f.Format.Check(); err != nil {
			v.add(at+".format", "%v", err)
		}
	}
}

// pointerText writes tokens back as a JSON Pointer.
func pointerText(tokens []string) string {
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(esc.Replace(t))
	}
	return b.String()
}

// presenter is a validated display, ready to fill in at each pause.
type presenter struct {
	title       []piece
	fields      []DisplayField
	fieldTokens [][]string
	reasonLabel string
}

// newPresenter prepares d, which Parse accepted; nil for no display.
func newPresenter(d *Display) *presenter {
	if d == nil {
		return nil
	}
	p := &presenter{fields: d.Fields, reasonLabel: d.ReasonLabel}
	p.title, _ = parseTemplate(d.Title)
	for _, f := range d.Fields {
		tokens, _ := domain.ParsePointer(f.Value)
		p.fieldTokens = append(p.fieldTokens, tokens)
	}
	return p
}

// present fills the display in for a pause whose state (and checkpoint)
// is s. A pointer that leads nowhere gives empty text in the title and
// null as a field's value.
func (p *presenter) present(s State) domain.Presentation {
	sc := scope{s: s}
	var title strings.Builder
	for _, pc := range p.title {
		if pc.tokens == nil {
			title.WriteString(pc.text)
		} else if raw, ok := sc.lookup(pc.tokens); ok {
			title.WriteString(titleText(raw))
		}
	}
	out := domain.Presentation{Title: title.String(), ReasonLabel: p.reasonLabel, Fields: make([]domain.Field, len(p.fields))}
	for i, f := range p.fields {
		value := json.RawMessage("null")
		if raw, ok := sc.lookup(p.fieldTokens[i]); ok {
			value = raw
		}
		out.Fields[i] = domain.Field{Label: f.Label, Value: value, Format: f.Format}
	}
	return out
}

// scope is what display pointers resolve against: {input, steps,
// checkpoint}, the checkpoint being the state the pause keeps.
type scope struct{ s State }

func (sc scope) lookup(tokens []string) (json.RawMessage, bool) {
	switch tokens[0] {
	case "input":
		return lookup(sc.s.Input, tokens[1:])
	case "steps":
		if len(tokens) == 1 {
			return marshalled(sc.s.Steps)
		}
		return lookup(sc.s.Steps[tokens[1]], tokens[2:])
	case "checkpoint":
		doc, ok := marshalled(sc.s)
		if !ok {
			return nil, false
		}
		return lookup(doc, tokens[1:])
	}
	return nil, false
}

func marshalled(v any) (json.RawMessage, bool) {
	b, err := json.Marshal(v)
	return b, err == nil
}

// lookup follows tokens into doc and returns the JSON value there as
// written (compacted), or false when there is none.
func lookup(doc json.RawMessage, tokens []string) (json.RawMessage, bool) {
	for _, tok := range tokens {
		doc = bytes.TrimSpace(doc)
		if len(doc) == 0 {
			return nil, false
		}
		switch doc[0] {
		case '{':
			var m map[string]json.RawMessage
			if json.Unmarshal(doc, &m) != nil {
				return nil, false
			}
			v, ok := m[tok]
			if !ok {
				return nil, false
			}
			doc = v
		case '[':
			var a []json.RawMessage
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || tok != strconv.Itoa(n) || json.Unmarshal(doc, &a) != nil || n >= len(a) {
				return nil, false
			}
			doc = a[n]
		default:
			return nil, false
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, doc) != nil || b.Len() == 0 {
		return nil, false
	}
	return b.Bytes(), true
}

// titleText prints a JSON value in a title: a string as its text, null
// as nothing, a number or boolean as written, an object or array as
// compact JSON. Line breaks and tabs become spaces: a title is one line.
func titleText(raw json.RawMessage) string {
	var out string
	switch raw[0] {
	case '"':
		if json.Unmarshal(raw, &out) != nil {
			out = string(raw)
		}
	case 'n':
		return ""
	default:
		out = string(raw)
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, out)
}
