package domain_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// The check of JSON that arrives encoded (input, resume data, a signal's
// payload, a checkpoint) takes any bytes without a panic; what it accepts
// is valid JSON without NUL or lone surrogates, and whose names are unique
// at every depth even ignoring case; what it refuses is an invalid_json
// validation error whose field, when it names one, is a JSON Pointer.
func FuzzCheckJSON(f *testing.F) {
	for _, seed := range []string{`{}`, `null`, `[1, "a", {"b": true}]`, `{"email": "a", "EMAIL": "b"}`, `{"a": {"a": 1, "a": 2}}`,
		`"\u0000"`, `"\ud800"`, "\"\xff\"", `{"k": [{"x": 1}, {"X": 2}]}`, `1e400`, `{"a":1} {}`, ``} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := domain.CheckJSON(data)
		if err == nil {
			if !json.Valid(data) {
				t.Fatalf("CheckJSON took %q", data)
			}
			d := json.NewDecoder(bytes.NewReader(data))
			d.UseNumber() // numbers beyond float64 (1e400) are kept as written
			var v any
			if d.Decode(&v) != nil {
				t.Fatalf("CheckJSON took %q, which does not decode", data)
			}
			if hasNUL(v) {
				t.Fatalf("CheckJSON took %q, which holds a NUL", data)
			}
			return
		}
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Code != domain.CodeInvalidJSON {
			t.Fatalf("CheckJSON(%q) = %v; want invalid_json", data, err)
		}
		for _, fe := range ve.Fields {
			if fe.Field != "" && fe.Field[0] != '/' {
				t.Fatalf("CheckJSON(%q) names %q, not a JSON Pointer", data, fe.Field)
			}
		}
	})
}

// hasNUL reports whether a decoded JSON value holds a NUL in a string or
// a name ("\\u0000", an escaped backslash before u0000, holds none).
func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		return slices.ContainsFunc(v, hasNUL)
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) || hasNUL(e) {
				return true
			}
		}
	}
	return false
}
