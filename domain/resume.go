package domain

import (
	"fmt"
	"time"
)

// ResumeFacts is what a store read for a resume, holding the run's lock.
type ResumeFacts struct {
	// RunStatus is the status of the run the resume is for.
	RunStatus RunStatus
	// Target is the suspension the request names, by id or by the run's
	// step key; nil when no pause or earlier resume has that step key yet.
	Target *Suspension
	// Votes are the votes cast on Target, for a decision on an approval.
	Votes []Vote
}

// ResumeFate is what a resume that is not refused does.
type ResumeFate int

// Resume fates.
const (
	// ResumeRepeat changes nothing: the request is the one that resumed
	// the target, sent again, and the target as it is is the answer.
	ResumeRepeat ResumeFate = iota + 1
	// ResumeApply resumes the pending target now. The store applies it
	// with a compare-and-set on the target still pending; one that finds
	// it no longer pending reads it again and decides again.
	ResumeApply
	// ResumeKeep keeps the resume for a pause that has not committed: a
	// pre-completed row the pause takes when it does.
	ResumeKeep
	// ResumeVote keeps a decision on a pending approval as a vote: the
	// approval stays pending, its policy's thresholds not yet reached.
	ResumeVote
)

// DecideResume decides what req does, given what the store read: of any
// number of resumes of one suspension exactly one is applied; a repeat of
// that one (same Idempotency-Key, resumer, data and decision) gets its
// answer back, also while it is kept for a pause still to come, so that a
// retry is answered alike before and after the pause commits; every
// other loses with CodeAlreadyResumed or, for an
// expired or cancelled suspension, CodeNotPending. A resume for a pause
// still to come is kept, unless the run has finished (CodeRunFinished).
// req.Check vets only a resume that would be applied; its error is
// returned as it is.
func DecideResume(req ResumeRequest, f ResumeFacts) (ResumeFate, error) {
	t := f.Target
	switch {
	case t == nil && f.RunStatus.Terminal():
		return 0, &ConflictError{Code: CodeRunFinished, Message: fmt.Sprintf("run %s is %s; there is nothing left to resume", req.RunID, f.RunStatus)}
	case t == nil:
		return ResumeKeep, nil
	case t.Status == SuspensionPending && !t.Precompleted:
		if req.Check != nil {
			if err := req.Check(*t); err != nil {
				return 0, err
			}
		}
		if t.Kind == KindApproval && req.Decision != "" && !req.System {
			return decideVote(req, *t, f.Votes)
		}
		return ResumeApply, nil
	case repeats(req, *t), revotes(req, f.Votes):
		return ResumeRepeat, nil
	}
	if err := alreadyVoted(req, *t, f.Votes); err != nil {
		return 0, err
	}
	return 0, LostResume(*t)
}

// DecideWake says whether a delay's timer, come due, wakes s at now: s is
// a pause still pending whose wake time has come. A pause that someone
// resumed, or that expired or was cancelled, before its timer fired keeps
// that end; a resume kept for a pause still to come is no timer's. A wake
// is a resume by ResumedByTimer, applied as any resume, with a
// compare-and-set on the suspension still pending.
func DecideWake(s Suspension, now time.Time) bool {
	return s.Status == SuspensionPending && !s.Precompleted && s.WakeAt != nil && !s.WakeAt.After(now)
}

// repeats says whether req is the request that resumed s, sent again: s
// resumed by it, or kept for its pause (pre-completed) on its behalf.
func repeats(req ResumeRequest, s Suspension) bool {
	data := req.Data
	if len(data) == 0 {
		data = []byte("null")
	}
	return s.Status == SuspensionResumed && req.RequestKey != "" && s.ResumeRequestKey == req.RequestKey &&
		s.ResumedBy == req.By && s.Decision == req.Decision && SameJSON(s.ResumeData, data)
}

// revotes says whether req is a decision that was cast as a vote, sent
// again: the same person, request key, decision and comment.
func revotes(req ResumeRequest, votes []Vote) bool {
	prior, ok := VoteOf(votes, req.By)
	return ok && req.Decision != "" && req.RequestKey != "" && prior.RequestKey == req.RequestKey &&
		prior.Decision == req.Decision && prior.Comment == commentOf(req.Data)
}

// LostResume explains why a resume of s changed nothing: s had already
// been resumed (by whom, when), or had expired or been cancelled.
func LostResume(s Suspension) *ConflictError {
	if s.Status == SuspensionResumed {
		at := ""
		if s.ResumedAt != nil {
			at = s.ResumedAt.Format(time.RFC3339Nano)
		}
		return &ConflictError{
			Code:    CodeAlreadyResumed,
			Message: fmt.Sprintf("suspension %s was already resumed by %s at %s", s.ID, s.ResumedBy, at),
			Detail:  map[string]any{"suspensionId": s.ID, "resumedBy": s.ResumedBy, "resumedAt": s.ResumedAt},
		}
	}
	if s.Status == SuspensionCancelled && s.Group == GroupAny {
		return &ConflictError{
			Code: CodeBranchNotTaken,
			Message: fmt.Sprintf("suspension %s was branch %s of a wait on any of several things (%s); another branch completed first, or the run ended, so it was cancelled",
				s.ID, s.Branch, s.GroupKey),
			Detail: map[string]any{"suspensionId": s.ID, "status": s.Status, "group": s.GroupKey, "branch": s.Branch},
		}
	}
	return &ConflictError{
		Code:    CodeNotPending,
		Message: fmt.Sprintf("suspension %s is %s and can no longer be resumed", s.ID, s.Status),
		Detail:  map[string]any{"suspensionId": s.ID, "status": s.Status},
	}
}
