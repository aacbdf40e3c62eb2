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

// A founder who started a run may not decide its approvals, even one
// assigned to them, but may supply its input; staff who started a run
// decide as before.
func TestCheckActorSeparationOfDuties(t *testing.T) {
	t.Parallel()
	ada := domain.User{ID: "u-ada", Email: "ada@x.com", Role: domain.RoleFounder}
	rev := domain.User{ID: "u-rev", Email: "rev@x.com", Role: domain.RoleReviewer}
	own := domain.Suspension{Kind: domain.KindApproval, Assignee: "ada@x.com", RunStartedBy: ada.ID}
	if err := own.CheckActor(ada); err != domain.ErrSeparationOfDuties {
		t.Errorf("the founder deciding their own run's approval: %v", err)
	}
	if !own.MayRead(ada) {
		t.Error("the founder cannot see the approval that they may not decide")
	}
	input := own
	input.Kind = domain.KindInput
	if err := input.CheckActor(ada); err != nil {
		t.Errorf("the founder's input to their own run: %v", err)
	}
	others := own
	others.RunStartedBy = "u-someone"
	if err := others.CheckActor(ada); err != nil {
		t.Errorf("the founder deciding an approval of a run someone else started: %v", err)
	}
	staffs := domain.Suspension{Kind: domain.KindApproval, RunStartedBy: rev.ID}
	if err := staffs.CheckActor(rev); err != nil {
		t.Errorf("a reviewer deciding their own run's approval: %v", err)
	}
	if err := staffs.CheckActor(ada); err != domain.ErrNotApprover {
		t.Errorf("a founder not assigned: %v", err)
	}
}
