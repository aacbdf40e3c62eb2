package replay_test

import (
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/replay"
)

// A replay workflow is for staff to start unless it allows founders where
// it is registered.
func TestReplayAllowFounders(t *testing.T) {
	t.Parallel()
	handler := func(c *replay.Context, in struct{}) (struct{}, error) { return in, nil }
	reg := domain.NewRegistry()
	env := &replay.Env{Store: &memLog{}}
	if err := replay.Workflow("staff", "1", handler).Register(reg, env); err != nil {
		t.Fatal(err)
	}
	if err := replay.Workflow("open", "1", handler).AllowFounders().Register(reg, env); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"staff": false, "open": true} {
		wf, ok := reg.Latest(id)
		if !ok || wf.MayStart(domain.RoleFounder) != want || !wf.MayStart(domain.RoleAdmin) {
			t.Errorf("%s: founders may start it: %v; want %v", id, wf.MayStart(domain.RoleFounder), want)
		}
	}
}
