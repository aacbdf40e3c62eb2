package views

import (
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// Every scope a key may be given is said in words on the users page.
func TestEveryScopeHasWords(t *testing.T) {
	for _, sc := range domain.Scopes {
		if scopeWords[sc] == "" {
			t.Errorf("no words for the scope %s", sc)
		}
	}
	if got := KeyScopes(domain.APIKey{}); got != "Everything its owner may" {
		t.Errorf("an unscoped key reads %q", got)
	}
	if got := KeyScopes(domain.APIKey{Scopes: []string{domain.ScopeRunsRead, domain.ScopeRunsStart}}); got != "Read runs and follow them; Start runs" {
		t.Errorf("a scoped key reads %q", got)
	}
}
