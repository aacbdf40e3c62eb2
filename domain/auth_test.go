package domain_test

import (
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// An email field, an invitation and a forgotten-password form take an
// address alone; anything mail headers allow around it is refused.
func TestIsEmailAddress(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"rita@example.com":              true,
		"rita.reviewer+tollgate@ex.org": true,
		"":                              false,
		"not-an-email":                  false,
		"Rita <rita@example.com>":       false,
		"<rita@example.com>":            false,
		" rita@example.com":             false,
		"rita@example.com (Rita)":       false,
		"rita@example.com, b@ex.org":    false,
	} {
		if got := domain.IsEmailAddress(s); got != want {
			t.Errorf("IsEmailAddress(%q) = %v; want %v", s, got, want)
		}
	}
}
