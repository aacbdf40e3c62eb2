package views

import (
	"fmt"
	"strconv"

	"github.com/tollgatehq/tollgate/domain"
)

// WaitGroup is a wait on several things with its branches, in the order
// they were declared.
type WaitGroup struct {
	Mode     domain.GroupMode
	Branches []domain.Suspension
}

// Done counts the branches that have completed.
func (g WaitGroup) Done() int {
	n := 0
	for _, b := range g.Branches {
		if b.Status == domain.SuspensionResumed {
			n++
		}
	}
	return n
}

// Summary says how far the group has come, in people's words: "2 of 3
// done", or which of several things the run takes first.
func (g WaitGroup) Summary() string {
	if g.Mode == domain.GroupAny {
		return "Waiting for whichever of these " + strconv.Itoa(len(g.Branches)) + " comes first; the others are then cancelled:"
	}
	return fmt.Sprintf("Waiting for all of these: %d of %d done", g.Done(), len(g.Branches))
}

// BranchLabel names a branch: its request's title, else its name.
func BranchLabel(s domain.Suspension) string {
	if s.Title != "" {
		return s.Title
	}
	return s.Branch
}

// BranchState is a branch's state in a word or two.
func BranchState(s domain.Suspension) string {
	switch s.Status {
	case domain.SuspensionPending:
		return "waiting"
	case domain.SuspensionCancelled:
		return "not needed"
	case domain.SuspensionExpired:
		return "expired"
	}
	switch s.Decision {
	case domain.DecisionApproved:
		return "approved"
	case domain.DecisionRejected:
		return "rejected"
	}
	if s.Kind == domain.KindDelay {
		return "time passed"
	}
	return "done"
}

// GroupNote tells someone looking at one branch what the rest of its
// group means for it.
func GroupNote(s domain.Suspension) string {
	if s.Group == domain.GroupAny {
		if s.Status == domain.SuspensionCancelled {
			return "This was one of several things the run could go on with; another came first, so this one is no longer needed."
		}
		return "This is one of several things the run can go on with: whichever comes first counts, and the others are then cancelled."
	}
	return "This is one of several things the run waits for; it goes on once all of them are done."
}
