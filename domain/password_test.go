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
	for _, good := range []string{"tangerine orbit lantern", "Kettle-Mosaic-Umbrella-42", "x7#Kp!2mQ9$z", strings.Repeat("é", 6) + "ünïcødé", "ada lovelace's brass ledger"} {
		if err := domain.ValidatePassword(good, "ada.lovelace@example.com"); err != nil {
			t.Errorf("ValidatePassword(%q) = %v, want it accepted", good, err)
		}
	}
}

// A password made of the person's email address — the address, the name
// before its @ (with or without its +tag and separators), with digits and
// symbols around it or as most of it — is refused, saying why; one that
// only mentions the name among words of its own is taken.
func TestValidatePasswordRefusesTheEmail(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, password, email string
		refused               bool
	}{
		{"the address", "rita@example.com", "rita@example.com", true},
		{"the address in capitals", "RITA@EXAMPLE.COM", "Rita@Example.com", true},
		{"digits after the address", "rita@example.com123", "rita@example.com", true},
		{"digits before the address", "123rita@example.com", "rita@example.com", true},
		{"symbols around the address", "!!rita@example.com??", "rita@example.com", true},
		{"the address as most of it", "rita@example.com-rocks", "rita@example.com", true},
		{"the name with a year", "margaret2026", "margaret@example.com", true},
		{"a year and symbols around the name", "2026margaret!!", "margaret@example.com", true},
		{"the name twice", "margaretmargaret", "margaret@example.com", true},
		{"the name de-leeted", "m4rg4r3t2026!", "margaret@example.com", true},
		{"the name without its dot", "AdaLovelace1815", "ada.lovelace@example.com", true},
		{"the name with spaces", "Ada Lovelace 1815", "ada.lovelace@example.com", true},
		{"the name with another separator", "ada_lovelace_1815", "ada.lovelace@example.com", true},
		{"the name without its tag", "ada.lovelace2024!", "ada.lovelace+work@example.com", true},
		{"the name without tag nor dot", "adalovelace!!2024", "ada.lovelace+work@example.com", true},
		{"the name as most of a phrase", "ada lovelace's ledger", "ada.lovelace@example.com", true},
		{"the name among words of its own", "ada lovelace's brass ledger", "ada.lovelace@example.com", false},
		{"another person's name", "margaret2026!!x", "rita@example.com", false},
		{"a short name inside words", "planning ann's garden", "ann@example.com", false},
		{"a name of two letters", "albatross harbour lamp", "al@example.com", false},
		{"a name of digits, a password without letters", "4821-9930-7716!", "12345678@example.com", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := domain.ValidatePassword(tt.password, tt.email)
			switch {
			case tt.refused && (err == nil || !strings.Contains(err.Error(), "your email address")):
				t.Errorf("ValidatePassword(%q, %q) = %v, want a refusal that names the email address", tt.password, tt.email, err)
			case !tt.refused && err != nil:
				t.Errorf("ValidatePassword(%q, %q) = %v, want it accepted", tt.password, tt.email, err)
			}
		})
	}
}
