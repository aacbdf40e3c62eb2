package views

import (
	"cmp"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
)

// scopeWords says what each API key scope lets a key do.
var scopeWords = map[string]string{
	domain.ScopeRunsRead:          "Read runs and follow them",
	domain.ScopeRunsStart:         "Start runs",
	domain.ScopeRunsManage:        "Cancel, retry and delete runs",
	domain.ScopeSignalsSend:       "Send signals to runs",
	domain.ScopeSuspensionsRead:   "Read requests",
	domain.ScopeSuspensionsDecide: "Decide requests and upload to them",
	domain.ScopeWorkflowsRead:     "Read workflows",
	domain.ScopeWorkflowsWrite:    "Register workflows",
	domain.ScopeAdmin:             "Administer: schedules, webhooks, people, keys, the audit log",
}

// KeyScopes says what a key may do, in words: everything its owner may,
// or the scopes it was given.
func KeyScopes(k domain.APIKey) string {
	if len(k.Scopes) == 0 {
		return "Everything its owner may"
	}
	words := make([]string, len(k.Scopes))
	for i, sc := range k.Scopes {
		words[i] = cmp.Or(scopeWords[sc], sc)
	}
	return strings.Join(words, "; ")
}
