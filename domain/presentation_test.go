package domain

import "testing"

func TestFieldFormatCheck(t *testing.T) {
	for _, f := range []FieldFormat{"", "text", "money:EUR", "date", "datetime", "email", "url", "number"} {
		if err := f.Check(); err != nil {
			t.Errorf("%q: %v", f, err)
		}
	}
	for _, f := range []FieldFormat{"money", "money:eur", "money:EURO", "date:long", "percent"} {
		if err := f.Check(); err == nil {
			t.Errorf("%q: accepted", f)
		}
	}
	if got := FieldFormat("money:USD").Currency(); got != "USD" {
		t.Errorf("currency = %q", got)
	}
}

func TestReasonLabelOf(t *testing.T) {
	for in, want := range map[string]string{
		"awaiting_documentation": "Awaiting documentation",
		"manager-approval":       "Manager approval",
		"":                       "",
		"KYC_check":              "KYC check",
	} {
		if got := ReasonLabelOf(in); got != want {
			t.Errorf("ReasonLabelOf(%q) = %q, want %q", in, got, want)
		}
	}
	s := Suspension{Reason: "awaiting_documentation", ReasonLabel: "Documents needed"}
	if s.ReasonName() != "Documents needed" {
		t.Errorf("ReasonName = %q", s.ReasonName())
	}
}
