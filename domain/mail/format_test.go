package mail

import (
	"encoding/json"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

func TestFormatField(t *testing.T) {
	for _, c := range []struct {
		value  string
		format domain.FieldFormat
		want   string
	}{
		{`389`, "money:EUR", "€389.00"},
		{`"ada@example.com"`, domain.FormatEmail, "ada@example.com"},
		{`"not money"`, "money:EUR", "not money"},
		{`null`, domain.FormatText, "—"},
		{``, domain.FormatText, "—"},
	} {
		if got := FormatField(domain.Field{Label: "x", Value: json.RawMessage(c.value), Format: c.format}); got != c.want {
			t.Errorf("FormatField(%s, %s) = %q, want %q", c.value, c.format, got, c.want)
		}
	}
}
