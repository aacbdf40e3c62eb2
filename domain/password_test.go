package domain_test

import (
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// The passwords a black-box probe got accepted, and their kin, are refused
// with a message that says why; passphrases are accepted.
func TestValidatePasswordRefusesWeakPasswords(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		password, email, why string
	}{
		{"password1234", "", "too common"},
		{"PASSWORD1234", "", "too common"},
		{"P@ssw0rd2024!", "", "too common"},
		{"Summer2025!!", "", "too common"},
		{"tollgate2026", "", "too common"},
		{"iloveyou12345", "", "too common"},
		{"correct horse battery staple", "", "too common"},
		{"123456789012", "", "run of letters"},
		{"210987654321", "", "run of letters"},
		{"abcdefghijkl", "", "run of letters"},
		{"qwertyuiopas", "", "run of letters"},
		{"1qaz2wsx3edc", "", "run of letters"},
		{strings.Repeat(" ", 12), "", "only spaces"},
		{"\t \n  \t   \n  ", "", "only spaces"},
		{"aaaaaaaaaaaa", "", "repeated"},
		{"abcabcabcabc", "", "repeated"},
		{"121212121212", "", "repeated"},
		{"ada.lovelace@example.com", "Ada.Lovelace@example.com", "email"},
		{"ada.lovelace2024!", "ada.lovelace@example.com", "email"},
		{"eleven char", "", "at least 12"},
		{strings.Repeat("xy", 513), "", "at most 1024"},
	} {
		err := domain.ValidatePassword(tt.password, tt.email)
		if err == nil || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("ValidatePassword(%q) = %v, want a refusal saying %q", tt.password, err, tt.why)
		}
	}
	for _, good := range []string{"tangerine orbit lantern", "Kettle-Mosaic-Umbrella-42", "x7#Kp!2mQ9$z", strings.Repeat("é", 6) + "ünïcødé", "ada lovelace's ledger"} {
		if err := domain.ValidatePassword(good, "ada.lovelace@example.com"); err != nil {
			t.Errorf("ValidatePassword(%q) = %v, want it accepted", good, err)
		}
	}
}
