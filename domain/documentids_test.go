package domain_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

func TestCheckNamedDocuments(t *testing.T) {
	t.Parallel()
	uploaded := func(id string) bool { return id == "d-1" || id == "d-2" }
	tests := []struct {
		name, data string
		fields     []string // nil: accepted
	}{
		{"no documents named", `{"note":"x"}`, nil},
		{"not an object", `["made-up"]`, nil},
		{"nested, not top level", `{"x":{"documentIds":["made-up"]}}`, nil},
		{"uploaded", `{"documentIds":["d-1","d-2"]}`, nil},
		{"empty list names none", `{"documentIds":[]}`, nil},
		{"made up", `{"documentIds":["made-up"]}`, []string{"/resumeData/documentIds/0"}},
		{"one of two", `{"documentIds":["d-1","made-up"]}`, []string{"/resumeData/documentIds/1"}},
		{"not a string", `{"documentIds":["d-1",7]}`, []string{"/resumeData/documentIds/1"}},
		{"not a list", `{"documentIds":"d-1"}`, []string{"/resumeData/documentIds"}},
		{"null", `{"documentIds":null}`, []string{"/resumeData/documentIds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := domain.CheckNamedDocuments(json.RawMessage(tt.data), uploaded)
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ve *domain.ValidationError
			if !errors.As(err, &ve) || ve.Code != domain.CodeUnknownDocument || len(ve.Fields) != len(tt.fields) {
				t.Fatalf("error = %v; want %s at %v", err, domain.CodeUnknownDocument, tt.fields)
			}
			for i, f := range tt.fields {
				if ve.Fields[i].Field != f {
					t.Errorf("field %d = %q; want %q", i, ve.Fields[i].Field, f)
				}
			}
		})
	}
}
