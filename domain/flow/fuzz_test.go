package flow_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
)

// Any bytes given as a workflow document are parsed and validated without
// a panic: a document, or problems (each with a JSON Pointer), never
// another error; and the same bytes give the same answer twice.
func FuzzParseDocument(f *testing.F) {
	examples, _ := filepath.Glob("../../cmd/tollgate/examples/*.json")
	for _, path := range examples {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	for _, seed := range []string{`{}`, `[]`, `null`, `{"id": "a", "version": "1", "steps": []}`, paidOrExpired,
		`{"id": "a", "version": "1", "steps": [{"type": "wait", "name": "w", "durationMs": -1}]}`,
		`{"id": "a", "version": "1", "steps": [{"type": "http", "name": "h", "url": "http://10.0.0.1/", "headers": {"X": {"$secret": "A"}}}]}`,
		`{"id": "a", "version": "1", "steps": [{"type": "approval", "name": "ok", "escalation": [{"afterMs": 1, "outcome": "reject"}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	env := testEnv(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, err := flow.Parse(body, env)
		again, err2 := flow.Parse(body, env)
		if (err == nil) != (err2 == nil) || doc.ID != again.ID {
			t.Fatalf("two parses of %q differ: %v / %v", body, err, err2)
		}
		if err == nil {
			if doc.ID == "" || len(doc.Steps) == 0 {
				t.Fatalf("accepted %q as a document without an id or steps", body)
			}
			return
		}
		var ie *flow.InvalidError
		var ve *domain.ValidationError
		switch {
		case errors.As(err, &ie):
			for _, p := range ie.Problems {
				if ptr := p.Pointer(); ptr != "" && ptr[0] != '/' {
					t.Fatalf("problem at %q has pointer %q", p.Path, ptr)
				}
			}
		case errors.As(err, &ve):
		default:
			t.Fatalf("Parse(%q) = %T %v; want problems", body, err, err)
		}
	})
}
