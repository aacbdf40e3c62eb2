package domain_test

import (
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// Who may act, by the suspension's restriction and the user's role.
func TestMayDecide(t *testing.T) {
	t.Parallel()
	admin := domain.User{Email: "ad@x.com", Role: domain.RoleAdmin}
	rev := domain.User{Email: "rev@x.com", Role: domain.RoleReviewer}
	fa := domain.User{Email: "fa@x.com", Role: domain.RoleFounder}
	fb := domain.User{Email: "fb@x.com", Role: domain.RoleFounder}
	for _, tt := range []struct {
		name string
		s    domain.Suspension
		may  []domain.User
		not  []domain.User
	}{
		{"open", domain.Suspension{}, []domain.User{admin, rev}, []domain.User{fa, fb}},
		{"assigned", domain.Suspension{Assignee: "FA@x.com"}, []domain.User{admin, rev, fa}, []domain.User{fb}},
		{"named", domain.Suspension{Approvers: []string{"fa@x.com"}}, []domain.User{admin, fa}, []domain.User{rev, fb}},
		{"role", domain.Suspension{ApproverRole: domain.RoleReviewer}, []domain.User{admin, rev}, []domain.User{fa, fb}},
		{"admins only", domain.Suspension{ApproverRole: domain.RoleAdmin, Assignee: "fa@x.com"}, []domain.User{admin}, []domain.User{rev, fa, fb}},
	} {
		for _, u := range tt.may {
			if !tt.s.MayDecide(u) || !tt.s.MayRead(u) {
				t.Errorf("%s: %s should act", tt.name, u.Email)
			}
		}
		for _, u := range tt.not {
			if tt.s.MayDecide(u) {
				t.Errorf("%s: %s should not act", tt.name, u.Email)
			}
			if u.Role == domain.RoleFounder && tt.s.MayRead(u) {
				t.Errorf("%s: %s should not see it", tt.name, u.Email)
			}
		}
	}
}
