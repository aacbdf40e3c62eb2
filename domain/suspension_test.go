package domain_test

import (
	"errors"
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

// A machine's wait (a timer, a webhook, an async step's callback, a
// signal) is resumed by hand only by an admin who confirms it; a wait for
// a person is vetted as before, confirmed or not.
func TestCheckHandResume(t *testing.T) {
	t.Parallel()
	admin := domain.User{ID: "a", Email: "ad@x.com", Role: domain.RoleAdmin}
	rev := domain.User{ID: "r", Email: "rev@x.com", Role: domain.RoleReviewer}
	founder := domain.User{ID: "f", Email: "fa@x.com", Role: domain.RoleFounder}
	for _, k := range []domain.SuspensionKind{domain.KindDelay, domain.KindWebhook, domain.KindCallback, domain.KindSignal} {
		s := domain.Suspension{Kind: k, Assignee: "fa@x.com"}
		for _, u := range []domain.User{rev, founder} {
			for _, confirmed := range []bool{false, true} {
				if err := s.CheckHandResume(u, confirmed); !errors.Is(err, domain.ErrMachineWait) {
					t.Errorf("%s by a %s (confirmed %v): %v; want ErrMachineWait", k, u.Role, confirmed, err)
				}
			}
			if err := s.CheckActor(u); !errors.Is(err, domain.ErrMachineWait) {
				t.Errorf("CheckActor: %s by a %s: %v; want ErrMachineWait", k, u.Role, err)
			}
		}
		ve, ok := errors.AsType[*domain.ValidationError](s.CheckHandResume(admin, false))
		if !ok || ve.Code != domain.CodeConfirmationRequired || len(ve.Fields) != 1 || ve.Fields[0].Field != "/confirmMachineWait" {
			t.Errorf("%s by an admin, unconfirmed: %+v; want confirmation_required on /confirmMachineWait", k, ve)
		}
		if err := s.CheckHandResume(admin, true); err != nil {
			t.Errorf("%s by an admin, confirmed: %v", k, err)
		}
	}
	for _, k := range []domain.SuspensionKind{domain.KindApproval, domain.KindInput} {
		s := domain.Suspension{Kind: k}
		for _, confirmed := range []bool{false, true} {
			if err := s.CheckHandResume(rev, confirmed); err != nil {
				t.Errorf("%s by a reviewer (confirmed %v): %v", k, confirmed, err)
			}
		}
	}
	for _, k := range []domain.SuspensionKind{domain.KindApproval, domain.KindInput, domain.KindDelay, domain.KindWebhook} {
		if domain.WaitsPerson.Has(k) == domain.WaitsMachine.Has(k) || !domain.WaitsAny.Has(k) {
			t.Errorf("%s is in both or neither of the people's and the machines' waits", k)
		}
	}
}
