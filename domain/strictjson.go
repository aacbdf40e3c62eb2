package domain

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// strictDecoding reads JSON the way the API reads request bodies, with
// encoding/json's semantics otherwise: a name matches a field only when it
// is spelled exactly as the field's, and duplicate names and invalid UTF-8
// are errors. encoding/json would bind "EMAIL" to an email field, and keep
// the last of "email" and "EMAIL", whose order PostgreSQL's jsonb and
// SQLite store differently. Unknown names are ignored: a step's input may
// carry more than the step reads (the run input passed along).
var strictDecoding = json.JoinOptions(
	jsonv1.DefaultOptionsV1(),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
	json.MatchCaseInsensitiveNames(false),
)

// DecodeJSON decodes data into v, matching names exactly (see
// strictDecoding). Steps and replay workflows read their input, resume data
// and signal payloads through it.
func DecodeJSON(data []byte, v any) error {
	return json.Unmarshal(data, v, strictDecoding)
}

// NameFolds finds, during a walk over a jsontext.Decoder's tokens, an object
// member whose name equals an earlier member's of the same object under
// Unicode case folding ("email" and "EMAIL"). Decoders that match names
// without regard to case read one of the two, and which one depends on the
// order the database kept; such a document is refused rather than guessed.
// The zero value is ready to use.
type NameFolds struct {
	open []map[string]string // per open object: folded name → name as written
}

// Next takes tok, the token d has just read, and returns the earlier name
// that tok, a member name, equals under case folding.
func (f *NameFolds) Next(d *jsontext.Decoder, tok jsontext.Token) (earlier string, clash bool) {
	switch tok.Kind() {
	case '{':
		f.open = append(f.open, nil)
	case '}':
		f.open = f.open[:len(f.open)-1]
	case '"':
		if kind, n := d.StackIndex(d.StackDepth()); kind != '{' || n%2 != 1 {
			return "", false // a value, not a name
		}
		name := tok.String()
		top := &f.open[len(f.open)-1]
		if *top == nil {
			*top = map[string]string{}
		}
		key := foldName(name)
		if prev, ok := (*top)[key]; ok {
			return prev, true
		}
		(*top)[key] = name
	}
	return "", false
}

// CaseClash is the message for two names NameFolds found equal. It echoes
// at most the first 100 bytes of each.
func CaseClash(earlier, name string) string {
	return fmt.Sprintf("names %q and %q differ only in case", clip(earlier), clip(name))
}

func clip(s string) string {
	const n = 100
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// foldName maps every string equal to name under simple case folding (as
// strings.EqualFold compares) to one key.
func foldName(name string) string {
	out := make([]rune, 0, len(name))
	for _, r := range name {
		out = append(out, foldRune(r))
	}
	return string(out)
}

// foldRune returns the smallest rune of r's case-folding orbit.
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}
