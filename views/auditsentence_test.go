package views

import (
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// A decision link's making and withdrawal read as sentences that name the
// request and the person, not as an action and an id.
func TestAuditSentenceOfDecisionLinks(t *testing.T) {
	names := AuditNames{Users: map[string]domain.User{"u-rita": {ID: "u-rita", Email: "rita@example.com", Name: "Rita Reviewer"}},
		Titles: map[string]string{"s-1": "Payout sign-off"}}
	for action, want := range map[string]string{
		"suspension.link_created": "Rita Reviewer made a decision link to Payout sign-off for partner@partner.example",
		"suspension.link_revoked": "Rita Reviewer withdrew a decision link to Payout sign-off",
	} {
		e := domain.AuditEntry{ActorID: "u-rita", ActorEmail: "rita@example.com", Action: action, Subject: "s-1",
			Data: []byte(`{"email":"partner@partner.example","linkId":"l-1","via":"api"}`)}
		var words []string
		for _, w := range NewAuditRow(e, names).Sentence {
			if w.Text != "" {
				words = append(words, w.Text)
			}
		}
		if got := strings.Join(words, " "); !strings.HasPrefix(got, want) || strings.Contains(got, action) || strings.Contains(got, "s-1") {
			t.Errorf("%s reads %q; want it to begin %q, in words", action, got, want)
		}
	}
}
