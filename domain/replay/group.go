package replay

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// A Wait is one branch of Any or All: a signal, a timer or an approval,
// named within its group.
type Wait struct {
	Name string                `json:"name"`
	Kind domain.SuspensionKind `json:"kind"`
	// Signal is the name of the signal a signal wait takes.
	Signal string `json:"signal,omitempty"`
	// Deadline is a timer's time, recorded when the group is first
	// reached; after is its duration from then.
	Deadline *time.Time `json:"deadline,omitempty"`
	after    time.Duration
	// Approval is an approval wait's request.
	Approval *ApproveOptions `json:"approval,omitempty"`
}

// Signal is a wait for the signal name, which completes it with its
// payload; the branch is named after the signal.
func Signal(name string) Wait { return Wait{Name: name, Kind: domain.KindSignal, Signal: name} }

// Timer is a wait of d from when the group is first reached; it completes
// with null.
func Timer(name string, d time.Duration) Wait {
	return Wait{Name: name, Kind: domain.KindDelay, after: d}
}

// Approval is a wait for a person's decision on opts, which completes it
// with {"approved", "comment", "votes"} (domain.ApprovalData).
func Approval(name string, opts ApproveOptions) Wait {
	return Wait{Name: name, Kind: domain.KindApproval, Approval: &opts}
}

// Winner is the branch that completed an Any first, with its data.
type Winner struct {
	Name string          `json:"winner"`
	Data json.RawMessage `json:"output"`
}

// Any pauses the run until the first of waits completes and returns it;
// the others are cancelled (a signal that comes for one later is kept as
// any signal nobody waits for is). Exactly one wins, also when several
// complete at the same instant; replay returns the same winner from the
// log. Its durable id is positional (__any-0, __any-1…).
func Any(c *Context, waits ...Wait) (Winner, error) {
	data, err := c.group(domain.GroupAny, waits)
	if err != nil {
		return Winner{}, err
	}
	var w Winner
	if err := json.Unmarshal(data, &w); err != nil {
		return Winner{}, c.halt(fmt.Errorf("decode the winner of Any: %w", err))
	}
	return w, nil
}

// All pauses the run until every one of waits has completed and returns
// their data by name. Its durable id is positional (__all-0, __all-1…).
func All(c *Context, waits ...Wait) (map[string]json.RawMessage, error) {
	data, err := c.group(domain.GroupAll, waits)
	if err != nil {
		return nil, err
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, c.halt(fmt.Errorf("decode the results of All: %w", err))
	}
	return out, nil
}

// group resolves a group from the log, or pauses on it: the first time it
// is reached it records GROUP_AWAITED with its timers' deadlines, which
// later invocations keep.
func (c *Context) group(mode domain.GroupMode, waits []Wait) (json.RawMessage, error) {
	id, r, err := c.reach(primGroup, "", reserved+string(mode))
	if err != nil {
		return nil, err
	}
	if r != nil && r.done != nil {
		var g groupResolved
		if err := json.Unmarshal(r.done.Payload, &g); err != nil {
			return nil, c.halt(fmt.Errorf("decode %s: %w", r.call, err))
		}
		return g.Data, nil
	}
	if err := checkWaits(id, waits); err != nil {
		return nil, c.halt(err)
	}
	p := &pause{StepID: id, Group: mode, Branches: waits}
	if r != nil && r.awaited != nil {
		var a groupAwaited
		if err := json.Unmarshal(r.awaited.Payload, &a); err != nil {
			return nil, c.halt(fmt.Errorf("decode %s: %w", r.call, err))
		}
		p.Branches = a.Branches // first reached earlier: its deadlines stand
		return nil, c.suspend(p)
	}
	now := c.env.now()
	for i := range p.Branches {
		if w := &p.Branches[i]; w.Kind == domain.KindDelay {
			d := now.Add(w.after).UTC()
			w.Deadline = &d
		}
	}
	c.record(EventGroupAwaited, id, groupAwaited{StepID: id, Mode: mode, Branches: p.Branches})
	return nil, c.suspend(p)
}

// checkWaits checks a group's waits before anything is recorded: 2 to
// domain.MaxBranches of them, with unique valid names, signals of valid
// names that are not replay's own, and approvals whose approvers can be.
func checkWaits(id string, waits []Wait) error {
	fail := func(format string, args ...any) error {
		return &StepError{Code: domain.CodeValidation, Message: fmt.Sprintf("%s: ", id) + fmt.Sprintf(format, args...)}
	}
	if n := len(waits); n < 2 || n > domain.MaxBranches {
		return fail("a group waits on 2 to %d things, not %d", domain.MaxBranches, n)
	}
	seen := map[string]bool{}
	for _, w := range waits {
		if err := domain.ValidateName("branch", w.Name); err != nil {
			return fail("%v", err)
		}
		if seen[w.Name] {
			return fail("branch %q is named twice", w.Name)
		}
		seen[w.Name] = true
		switch w.Kind {
		case domain.KindSignal:
			if err := domain.ValidateName("signal", w.Signal); err != nil || strings.HasPrefix(w.Signal, reserved) {
				return fail("branch %s: signal name %q is not one a handler may wait for", w.Name, w.Signal)
			}
		case domain.KindDelay:
			if w.after < 0 {
				return fail("branch %s: a timer of %v", w.Name, w.after)
			}
		case domain.KindApproval:
			if _, err := domain.CheckApprovers(w.Approval.Role, w.Approval.Approvers); err != nil {
				return fail("branch %s: %v", w.Name, err)
			}
		default:
			return fail("branch %s is not a Signal, Timer or Approval", w.Name)
		}
	}
	return nil
}

// groupCommand is the kernel's pause of group p: one branch per wait, the
// group keyed by its durable id, resumed into the invocation step.
func groupCommand(p *pause) domain.Command {
	branches := make([]domain.Command, len(p.Branches))
	for i, w := range p.Branches {
		var cmd domain.Command
		switch w.Kind {
		case domain.KindSignal:
			cmd = domain.Suspend(w.Signal, nil, "", domain.WithKind(domain.KindSignal))
		case domain.KindDelay:
			cmd = domain.SleepUntil(*w.Deadline, nil, "")
		default:
			cmd = domain.Review("approval", nil, approvalOptions(w.Approval)...)
		}
		branches[i] = domain.Branch(w.Name, cmd)
	}
	wait := domain.WaitAll
	if p.Group == domain.GroupAny {
		wait = domain.WaitAny
	}
	cmd := wait("group", p, StepName, branches...)
	cmd.StepKey = p.StepID
	return cmd
}

// groupData is the group's resume data as the handler gets it: each
// branch's own data, with a signal's payload in place of the signal.
func groupData(p *pause, data json.RawMessage) (json.RawMessage, error) {
	kinds := make(map[string]domain.SuspensionKind, len(p.Branches))
	for _, w := range p.Branches {
		kinds[w.Name] = w.Kind
	}
	own := func(name string, raw json.RawMessage) (json.RawMessage, error) {
		if kinds[name] != domain.KindSignal || domain.IsNull(raw) {
			return raw, nil
		}
		var s domain.SignalData
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("decode the signal of branch %s: %w", name, err)
		}
		return s.Payload, nil
	}
	if p.Group == domain.GroupAny {
		var a domain.AnyData
		if err := json.Unmarshal(data, &a); err != nil {
			return nil, fmt.Errorf("decode the winner of %s: %w", p.StepID, err)
		}
		out, err := own(a.Winner, a.Output)
		if err != nil {
			return nil, err
		}
		return json.Marshal(Winner{Name: a.Winner, Data: out})
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, fmt.Errorf("decode the branches of %s: %w", p.StepID, err)
	}
	for name, raw := range all {
		out, err := own(name, raw)
		if err != nil {
			return nil, err
		}
		all[name] = out
	}
	return json.Marshal(all)
}
