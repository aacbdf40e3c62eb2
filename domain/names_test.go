package domain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

func TestValidateName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		says     string // part of the message; "" if valid
	}{
		{"one letter", "a", ""},
		{"all allowed characters", "Verify-claim_2.v10", ""},
		{"exactly the limit", strings.Repeat("x", domain.MaxNameLen), ""},
		{"empty", "", "empty"},
		{"over the limit", strings.Repeat("x", domain.MaxNameLen+1), "101 characters"},
		{"space", "verify claim", `' '`},
		{"path traversal", "../etc", `'/'`},
		{"NUL", "a\x00b", "byte 0x00 at position 2"},
		{"newline", "a\nb", "byte 0x0a"},
		{"DEL", "a\x7f", "byte 0x7f"},
		{"RTL override", "pay\u202Eusd", "byte 0xe2 at position 4"},
		{"non-ASCII letter", "café", "byte 0xc3"},
		{"SQL meta-characters", "x'; DROP TABLE runs; --", `'\''`},
		{"hash (step keys use it)", "step#2", `'#'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := domain.ValidateName("step", tt.in)
			if tt.says == "" {
				if err != nil {
					t.Fatalf("ValidateName(%q) = %v; want nil", tt.in, err)
				}
				return
			}
			var ve *domain.ValidationError
			if !errors.As(err, &ve) || ve.Code != domain.CodeValidation || !strings.Contains(ve.Message, tt.says) || !strings.HasPrefix(ve.Message, "step name") {
				t.Fatalf("ValidateName(%q) = %v; want a validation error saying %q", tt.in, err, tt.says)
			}
		})
	}
}
