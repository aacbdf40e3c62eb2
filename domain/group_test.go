package domain_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

func TestPlanGroup(t *testing.T) {
	o := outcome(t, domain.StepResult{Commands: []domain.Command{
		domain.Invoke("side", nil),
		domain.WaitAny("paid-or-expired", map[string]int{"a": 1}, "next",
			domain.Branch("paid", domain.Suspend("paid", nil, "", domain.WithKind(domain.KindWebhook))),
			domain.Branch("expire", domain.Sleep(time.Hour, nil, "")),
			domain.Branch("waive", domain.Review("waive", nil, domain.WithApprovers(domain.RoleAdmin)))),
	}})
	n := 0
	o.NewID = func() string { n++; return "s" + string(rune('0'+n)) }
	c := domain.Plan(o)
	if c.Finish != nil || c.Suspension != nil || len(c.Branches) != 3 {
		t.Fatalf("plan = %+v; want three branches and no single pause", c)
	}
	for i, want := range []struct {
		name string
		kind domain.SuspensionKind
	}{{"paid", domain.KindWebhook}, {"expire", domain.KindDelay}, {"waive", domain.KindApproval}} {
		b := c.Branches[i]
		if b.Branch != want.name || b.Kind != want.kind || b.Group != domain.GroupAny || b.ResumeStep != "next" || string(b.Checkpoint) != `{"a":1}` {
			t.Fatalf("branch %d = %+v; want %s, a %s resuming next with the group's checkpoint", i, b, want.name, want.kind)
		}
	}
	if w := c.Branches[1].WakeAt; w == nil || !w.Equal(now.Add(time.Hour)) {
		t.Fatalf("the timer branch wakes at %v; want an hour from now", w)
	}
	if got := types(c); !slices.Equal(got, []string{domain.EventStepCompleted, domain.EventCommandsDropped, domain.EventWorkflowPaused}) {
		t.Fatalf("events %v; want the step completed (it resumes another), the sibling dropped and one pause", got)
	}
}

func TestPlanGroupRules(t *testing.T) {
	hook := func(name string) domain.Command {
		return domain.Branch(name, domain.Suspend(name, nil, "", domain.WithKind(domain.KindWebhook)))
	}
	for _, tc := range []struct {
		name string
		cmd  domain.Command
		want string
	}{
		{"one branch", domain.WaitAny("w", nil, "", hook("a")), "2 to 20 branches"},
		{"unnamed", domain.WaitAll("w", nil, "", hook("a"), domain.Suspend("b", nil, "")), "branch name is empty"},
		{"twice", domain.WaitAll("w", nil, "", hook("a"), hook("a")), "used twice"},
		{"not a wait", domain.WaitAny("w", nil, "", hook("a"), domain.Branch("b", domain.Invoke("next", nil))), "a branch is a wait"},
		{"nested", domain.WaitAny("w", nil, "", hook("a"), domain.Branch("b", domain.WaitAll("x", nil, "", hook("c"), hook("d")))), "do not nest"},
		{"own resume step", domain.WaitAny("w", nil, "", hook("a"), domain.Branch("b", domain.Suspend("b", nil, "next"))), "resumes the group's"},
		{"bad mode", domain.Command{Type: domain.CmdSuspend, Reason: "w", Group: "some", Branches: []domain.Command{hook("a"), hook("b")}}, "unknown group mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := domain.Plan(outcome(t, domain.StepResult{Commands: []domain.Command{tc.cmd}}))
			failedWith(t, c, domain.CodeOrchestration)
			if msg := c.Finish.Error.Message; !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q; want it to say %q", msg, tc.want)
			}
		})
	}
}

func TestDecideGroup(t *testing.T) {
	branch := func(id, name string, st domain.SuspensionStatus, data string) domain.Suspension {
		return domain.Suspension{ID: id, Branch: name, Status: st, ResumeData: json.RawMessage(data)}
	}
	pending, resumed := domain.SuspensionPending, domain.SuspensionResumed
	a := branch("1", "a", resumed, `{"x":1}`)
	t.Run("any: the branch that completed wins and cancels the rest", func(t *testing.T) {
		v := domain.DecideGroup(domain.GroupAny, []domain.Suspension{branch("0", "z", pending, ""), a, branch("2", "b", pending, "")}, a)
		if !v.Resolved || v.By.ID != "1" || !slices.Equal(v.Cancel, []string{"0", "2"}) || string(v.Data) != `{"winner":"a","output":{"x":1}}` {
			t.Fatalf("verdict %+v (%s)", v, v.Data)
		}
	})
	t.Run("any: of branches completed before the pause, the first wins", func(t *testing.T) {
		b := branch("2", "b", resumed, `null`)
		v := domain.DecideGroup(domain.GroupAny, []domain.Suspension{a, b}, b)
		if !v.Resolved || v.By.ID != "1" || len(v.Cancel) != 0 {
			t.Fatalf("verdict %+v", v)
		}
	})
	t.Run("all: waits for every branch", func(t *testing.T) {
		v := domain.DecideGroup(domain.GroupAll, []domain.Suspension{a, branch("2", "b", pending, "")}, a)
		if v.Resolved || v.Completed != 1 || v.Of != 2 || len(v.Cancel) != 0 {
			t.Fatalf("verdict %+v", v)
		}
		b := branch("2", "b", resumed, "")
		v = domain.DecideGroup(domain.GroupAll, []domain.Suspension{a, b}, b)
		if !v.Resolved || v.By.ID != "2" || v.Completed != 2 || string(v.Data) != `{"a":{"x":1},"b":null}` {
			t.Fatalf("verdict %+v (%s)", v, v.Data)
		}
	})
}
