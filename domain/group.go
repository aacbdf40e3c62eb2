package domain

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// GroupMode says when a wait on several things (a group of branches)
// resolves.
type GroupMode string

// Group modes.
const (
	// GroupAny resolves on the first branch that completes; the others
	// are cancelled.
	GroupAny GroupMode = "any"
	// GroupAll resolves when every branch has completed.
	GroupAll GroupMode = "all"
)

// Valid reports whether m is a defined mode.
func (m GroupMode) Valid() bool { return m == GroupAny || m == GroupAll }

// Group limits: a wait on several things has 2 to MaxBranches branches.
const MaxBranches = 20

// Branch names one wait of a group (see WaitAny and WaitAll): a suspend
// or review command, whose checkpoint and resume step are the group's.
func Branch(name string, wait Command) Command {
	wait.Branch = name
	return wait
}

// WaitAny pauses the run on several waits at once, each a Branch: the
// first to complete resumes resumeStep (empty: the current step) with
// {checkpoint, resumeData} where resumeData is {"winner": branch,
// "output": its data} (see AnyData); the other branches are cancelled.
// Exactly one branch wins, also when several complete at the same instant
// on different servers.
func WaitAny(reason string, checkpoint any, resumeStep string, branches ...Command) Command {
	return Command{Type: CmdSuspend, Group: GroupAny, Reason: reason, Checkpoint: checkpoint, ResumeStep: resumeStep, Branches: branches}
}

// WaitAll pauses the run on several waits at once, each a Branch; when
// the last completes, resumeStep runs with resumeData keyed by branch
// name, each branch's own data.
func WaitAll(reason string, checkpoint any, resumeStep string, branches ...Command) Command {
	return Command{Type: CmdSuspend, Group: GroupAll, Reason: reason, Checkpoint: checkpoint, ResumeStep: resumeStep, Branches: branches}
}

// AnyData is the resume data of a group that resolves on any branch.
type AnyData struct {
	Winner string          `json:"winner"`
	Output json.RawMessage `json:"output"`
}

// GroupVerdict is what a group's branches, as they stand under the run's
// lock, decide (see DecideGroup).
type GroupVerdict struct {
	// Resolved is true when the group resumes its run now.
	Resolved bool
	// By is the branch that resolves it: the winner of an any group, the
	// last branch to complete of an all group.
	By *Suspension
	// Data is the group's resume data (AnyData, or the branches' data by
	// name).
	Data json.RawMessage
	// Cancel lists the ids of the branches still pending that the
	// resolution cancels.
	Cancel []string
	// Completed and Of count the branches completed and in all.
	Completed, Of int
}

// DecideGroup decides a group from its branches (in their declared
// order) after one of them, done, has just been resumed. An any group
// resolves with done as the winner unless another branch was resumed
// before it, as happens only when a pause found several of its branches
// completed early: then the first such branch in order wins. An all group
// resolves once no branch is pending.
func DecideGroup(mode GroupMode, branches []Suspension, done Suspension) GroupVerdict {
	v := GroupVerdict{Of: len(branches)}
	var pending []string
	for _, b := range branches {
		if b.Status == SuspensionPending {
			pending = append(pending, b.ID)
		} else {
			v.Completed++
		}
	}
	switch mode {
	case GroupAny:
		winner := done
		if i := slices.IndexFunc(branches, func(b Suspension) bool { return b.Status == SuspensionResumed }); i >= 0 {
			winner = branches[i]
		}
		v.Resolved, v.By, v.Cancel = true, &winner, pending
		v.Data = MustJSON(AnyData{Winner: winner.Branch, Output: OrNull(winner.ResumeData)})
	default:
		if len(pending) > 0 {
			return v
		}
		out := make(map[string]json.RawMessage, len(branches))
		for _, b := range branches {
			out[b.Branch] = OrNull(b.ResumeData)
		}
		v.Resolved, v.By, v.Data = true, &done, MustJSON(out)
	}
	return v
}

// checkGroup checks the branches of group command c (at index i of a
// result): 2 to MaxBranches waits, each a suspend or review with a
// unique name, none a group itself nor with a resume step of its own.
func checkGroup(i int, c Command) error {
	if !c.Group.Valid() {
		return &OrchestrationError{Message: fmt.Sprintf("command %d has unknown group mode %q (any or all)", i, c.Group)}
	}
	if n := len(c.Branches); n < 2 || n > MaxBranches {
		return &OrchestrationError{Message: fmt.Sprintf("command %d waits on %d things; a group has 2 to %d branches", i, n, MaxBranches)}
	}
	seen := map[string]bool{}
	for j, b := range c.Branches {
		where := fmt.Sprintf("command %d branch %d", i, j)
		if err := ValidateName("branch", b.Branch); err != nil {
			return &OrchestrationError{Message: fmt.Sprintf("%s: %v", where, err)}
		}
		if seen[b.Branch] {
			return &OrchestrationError{Message: fmt.Sprintf("%s: branch name %q is used twice", where, b.Branch)}
		}
		seen[b.Branch] = true
		switch {
		case !b.Type.Blocking():
			return &OrchestrationError{Message: fmt.Sprintf("%s (%s) is a %s command; a branch is a wait (suspend or review)", where, b.Branch, b.Type)}
		case b.Group != "" || len(b.Branches) > 0:
			return &OrchestrationError{Message: fmt.Sprintf("%s (%s) is a group itself; groups do not nest", where, b.Branch)}
		case b.ResumeStep != "":
			return &OrchestrationError{Message: fmt.Sprintf("%s (%s) names resume step %q; a branch resumes the group's", where, b.Branch, b.ResumeStep)}
		case b.Kind != "" && !b.Kind.Valid():
			return &OrchestrationError{Message: fmt.Sprintf("%s (%s) has unknown suspension kind %q", where, b.Branch, b.Kind)}
		}
		if err := ValidateName("suspension reason", b.Reason); err != nil {
			return &OrchestrationError{Message: fmt.Sprintf("%s (%s): %v", where, b.Branch, err)}
		}
	}
	return nil
}

// EventBranchCompleted records, in the run's log, that a branch of a wait
// on several things completed; RUN_RESUMED follows when that resolves the
// group.
const EventBranchCompleted = "BRANCH_COMPLETED"

// BranchEvent is the log entry of branch s completing, as the
// completed'th of its group's of branches (0, 0 when not counted);
// extra joins its payload.
func BranchEvent(s Suspension, completed, of int, extra map[string]any) NewEvent {
	done := map[string]any{"suspensionId": s.ID, "group": s.GroupKey, "mode": s.Group, "branch": s.Branch, "resumedBy": s.ResumedBy}
	if of > 0 {
		done["completed"], done["of"] = completed, of
	}
	if s.Decision != "" {
		done["decision"] = s.Decision
	}
	maps.Copy(done, extra)
	return NewEvent{Type: EventBranchCompleted, Step: s.StepName, Payload: MustJSON(done)}
}

// GroupResumed is the RUN_RESUMED entry of a group that verdict v
// resolves: the branch that resolved it and, for any, the branches it
// cancelled, by name (names maps the group's branch ids to names).
func GroupResumed(v GroupVerdict, names map[string]string) NewEvent {
	by := v.By
	resumed := map[string]any{"suspensionId": by.ID, "group": by.GroupKey, "mode": by.Group, "resumedBy": by.ResumedBy}
	if by.Group == GroupAny {
		resumed["winner"] = by.Branch
		cancelled := make([]string, 0, len(v.Cancel))
		for _, id := range v.Cancel {
			cancelled = append(cancelled, names[id])
		}
		resumed["cancelled"] = cancelled
	}
	return NewEvent{Type: EventRunResumed, Step: by.StepName, Payload: MustJSON(resumed)}
}
