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
		{`"1234567.5"`, "money:USD", "$1,234,567.50"},
		{`-12.345`, "money:CHF", "-12.35 CHF"},
		{`5000`, "money:JPY", "¥5,000"},
		{`"2026-03-02"`, domain.FormatDate, "2 March 2026"},
		{`"2026-03-02T14:05:00+01:00"`, domain.FormatDateTime, "2 March 2026, 13:05 UTC"},
		{`1234567`, domain.FormatNumber, "1,234,567"},
		{`"ada@example.com"`, domain.FormatEmail, "ada@example.com"},
		{`"not money"`, "money:EUR", "not money"},
		{`null`, domain.FormatText, "—"},
		{``, domain.FormatText, "—"},
		{`{"a":1}`, domain.FormatText, `{"a":1}`},
	} {
		if got := FormatField(domain.Field{Label: "x", Value: json.RawMessage(c.value), Format: c.format}); got != c.want {
			t.Errorf("FormatField(%s, %s) = %q, want %q", c.value, c.format, got, c.want)
		}
	}
}
