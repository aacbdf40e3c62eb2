package web_test

import (
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/web"
)

// Every password a person chooses keeps one rule, wherever it is set: at
// least 12 characters (not bytes), at most 1024 bytes, and not a common
// or patterned one (domain.ValidatePassword).
func TestHashPasswordKeepsThePasswordRule(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		password string
		ok       bool
	}{
		{"eleven char", false},
		{"twelve chars", true},
		{strings.Repeat("é", 10) + "x", false}, // 21 bytes, 11 characters
		{strings.Repeat("é", 11) + "x", true},
		{strings.Repeat("xyz", 341) + "a", true},
		{strings.Repeat("xyz", 341) + "ab", false},
		{"password1234", false},
		{"123456789012", false},
		{strings.Repeat(" ", 12), false},
	} {
		hash, err := web.HashPassword(tt.password)
		if (err == nil) != tt.ok {
			t.Errorf("HashPassword of %d bytes: %v; want ok=%v", len(tt.password), err, tt.ok)
		}
		if tt.ok && !web.CheckPassword(hash, tt.password) {
			t.Errorf("the hash of %d bytes does not check", len(tt.password))
		}
	}
}
