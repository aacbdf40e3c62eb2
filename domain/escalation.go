package domain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// EscalatedBy is who decides a request when a rung of its ladder does:
// the ResumedBy of the decision, and the actor of its audit entry.
const EscalatedBy = "escalation"

// EventRequestEscalated records, in the run's log, a rung of a request's
// deadline ladder that fired.
const EventRequestEscalated = "REQUEST_ESCALATED"

// EscalateRequest is a rung of a request's deadline ladder come due: its
// job, as a worker claimed it.
type EscalateRequest struct {
	Job          JobRef
	RunID        string
	SuspensionID string
	Rung         int
	Now          time.Time
	// Deciders is how many people may decide the request when its rung
	// is an outcome come due before its time (see EscalatesAtOnce): the
	// outcome's comment says so.
	Deciders int
}

// EscalationInput is an escalate job's input: the rung it fires.
type EscalationInput struct {
	Rung int `json:"rung"`
}

// EscalateJobKey is the key of the job of rung of suspension id.
func EscalateJobKey(suspensionID string, rung int) string {
	return "escalate-" + suspensionID + "-" + strconv.Itoa(rung)
}

// EscalationJob is the job that fires rung of s's ladder when it is due,
// or nil when the ladder has no such rung.
func EscalationJob(s Suspension, rung int) *NewJob {
	_, at, ok := s.Policy.NextRung(rung, s.SuspendedAt)
	if !ok {
		return nil
	}
	return &NewJob{Key: EscalateJobKey(s.ID, rung), Kind: JobEscalate, RunID: s.RunID, SuspensionID: s.ID,
		Input: MustJSON(EscalationInput{Rung: rung}), RunAt: at}
}

// Escalation is what a rung come due does to its request (see
// DecideEscalation).
type Escalation struct {
	// Fire is false when the rung does nothing: its request was decided
	// or cancelled, or the rung fired already.
	Fire bool
	Rung Rung
	// Approvers and ApproverRole are who may decide after an
	// addApprovers rung.
	Approvers    []string
	ApproverRole Role
	// Resume is the decision of an outcome rung, taken in the system's
	// name.
	Resume *ResumeRequest
	// Next is the job of the rung that follows, when one does.
	Next *NewJob
	// Event records the rung in the run's log; Audit in the audit log.
	Event NewEvent
	Audit *AuditEntry
}

// DecideEscalation decides what rung req.Rung does to s, the request as
// it is under its run's lock. A rung fires once, in order, and only while
// s waits: s.Escalated counts the rungs fired, so a job run twice, or a
// rung that comes due after a decision, does nothing. A remind rung tells
// the people who may decide again; addApprovers widens who may (never
// narrows: a request open to all staff stays so, and the people named join
// them); an outcome decides as EscalatedBy, without a vote.
func DecideEscalation(req EscalateRequest, s Suspension) Escalation {
	r, _, ok := s.Policy.NextRung(req.Rung, s.SuspendedAt)
	if !ok || s.Status != SuspensionPending || s.Precompleted || s.Escalated != req.Rung {
		return Escalation{}
	}
	if _, at, _ := s.Policy.NextRung(req.Rung, s.SuspendedAt); r.Outcome != "" && req.Now.Before(at) && !s.EscalatesAtOnce(req.Deciders) {
		// Someone who may decide came after the outcome was brought
		// forward: it waits for its own time again.
		return Escalation{Next: EscalationJob(s, req.Rung)}
	}
	e := Escalation{Fire: true, Rung: r, Approvers: s.Approvers, ApproverRole: s.ApproverRole}
	action := "remind"
	switch {
	case r.AddApprovers != nil:
		action = "addApprovers"
		e.Approvers, e.ApproverRole = widen(s, *r.AddApprovers)
	case r.Outcome != "":
		action = r.Outcome
		e.Resume = &ResumeRequest{SuspensionID: s.ID, RunID: s.RunID, By: EscalatedBy, Channel: ChannelSystem, System: true, Now: req.Now,
			Data: r.Data}
		if s.Kind == KindApproval {
			e.Resume.Decision = DecisionRejected
			if r.Outcome == OutcomeApprove {
				e.Resume.Decision = DecisionApproved
			}
			comment := r.Comment
			if _, at, _ := s.Policy.NextRung(req.Rung, s.SuspendedAt); req.Now.Before(at) {
				comment = NobodyLeft(s, req.Deciders)
			}
			e.Resume.Data = MustJSON(ApprovalData{Approved: r.Outcome == OutcomeApprove, Comment: comment})
		}
		if len(e.Resume.Data) == 0 {
			e.Resume.Data = json.RawMessage("null")
		}
	}
	if r.Outcome == "" {
		e.Next = EscalationJob(s, req.Rung+1)
	}
	detail := map[string]any{"suspensionId": s.ID, "rung": req.Rung, "action": action}
	e.Event = NewEvent{Type: EventRequestEscalated, Step: s.StepName, Payload: MustJSON(detail)}
	e.Audit = &AuditEntry{ActorEmail: EscalatedBy, Action: "suspension.escalated", Subject: s.ID, WorkflowID: s.WorkflowID, Data: MustJSON(detail)}
	return e
}

// widen returns who may decide s once add joins them. A request open to
// all staff (not restricted) stays open to them: it becomes restricted to
// reviewers, which admins and reviewers are, plus the people added and
// its assignee.
func widen(s Suspension, add Approvers) ([]string, Role) {
	emails := slices.Clone(s.Approvers)
	role := s.ApproverRole
	if !s.Restricted() {
		role = RoleReviewer
		if s.Assignee != "" {
			emails = append(emails, strings.ToLower(s.Assignee))
		}
	}
	role = cmpRole(role, add.Role)
	for _, a := range add.Emails {
		if a = strings.ToLower(strings.TrimSpace(a)); !slices.Contains(emails, a) {
			emails = append(emails, a)
		}
	}
	return emails, role
}

// cmpRole is the wider of two approver roles: reviewer (which admins
// also are) over admin over none.
func cmpRole(a, b Role) Role {
	if a == RoleReviewer || b == RoleReviewer {
		return RoleReviewer
	}
	if a == RoleAdmin || b == RoleAdmin {
		return RoleAdmin
	}
	return ""
}

// escalatedTo reports whether a rung of s's ladder that fired added
// the people of role: they are asked by name.
func (s Suspension) escalatedTo(role Role) bool {
	for _, r := range s.Policy.Escalation[:min(s.Escalated, len(s.Policy.Escalation))] {
		if r.AddApprovers != nil && r.AddApprovers.Role == role {
			return true
		}
	}
	return false
}

// NextEscalation says, in words for people, what the next rung of s's
// ladder does and when, relative to now: "Escalates to admins in 2 days".
// It is empty when no rung is left or s no longer waits.
func NextEscalation(s Suspension, now time.Time) string {
	r, at, ok := s.Policy.NextRung(s.Escalated, s.SuspendedAt)
	if !ok || s.Status != SuspensionPending {
		return ""
	}
	when := "in " + roughDuration(at.Sub(now))
	if !at.After(now) {
		when = "now"
	}
	switch {
	case r.Remind:
		return "Reminder " + when
	case r.AddApprovers != nil:
		return "Escalates to " + approversName(*r.AddApprovers) + " " + when
	case r.Outcome == OutcomeApprove:
		return "Approved automatically " + when
	case r.Outcome == OutcomeReject:
		return "Rejected automatically " + when
	}
	return "Resumed automatically " + when
}

// approversName names added approvers: "admins", "reviewers", "ann@x.test
// and admins".
func approversName(a Approvers) string {
	names := slices.Clone(a.Emails)
	switch a.Role {
	case RoleAdmin:
		names = append(names, "admins")
	case RoleReviewer:
		names = append(names, "reviewers")
	}
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// roughDuration says d the way people do, to the nearest unit: "2
// days", "3 hours", "5 minutes", "less than a minute".
func roughDuration(d time.Duration) string {
	unit := func(u time.Duration, one string) string {
		n := int64((d + u/2) / u)
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	switch {
	case d >= 23*time.Hour+30*time.Minute:
		return unit(24*time.Hour, "day")
	case d >= 59*time.Minute+30*time.Second:
		return unit(time.Hour, "hour")
	case d >= 30*time.Second:
		return unit(time.Minute, "minute")
	}
	return "less than a minute"
}

// EventRequestUndecidable records, in the run's log, that fewer people
// may decide a request than its policy needs: the ladder, if it has one,
// escalates at once.
const EventRequestUndecidable = "REQUEST_UNDECIDABLE"

// Deciders counts the people among users who may decide s now: enabled,
// and let act by s (see Suspension.CheckActor), admins included.
func Deciders(s Suspension, users []User) int {
	n := 0
	for _, u := range users {
		if !u.Disabled && s.CheckActor(u) == nil {
			n++
		}
	}
	return n
}

// Undecidable reports whether s, a request for a person under a policy,
// has fewer people who may decide it (deciders, see Deciders) than its
// policy needs to approve it, or, for an input, no one. Admins may always
// decide, so at registration a policy cannot be known to leave nobody;
// it can when the request is asked (the person who started the run, the
// requesters and disabled accounts left out) and after each rung that
// widens it.
func (s Suspension) Undecidable(deciders int) bool {
	if !s.Kind.WaitsForPerson() {
		return false
	}
	if s.Kind == KindApproval {
		approvals, _ := s.Policy.Needed()
		return deciders < approvals
	}
	return deciders == 0
}

// UndecidableEvent is the log entry of s found undecidable with deciders
// people able to decide it.
func UndecidableEvent(s Suspension, deciders int) NewEvent {
	needed := 1
	if s.Kind == KindApproval {
		needed, _ = s.Policy.Needed()
	}
	return NewEvent{Type: EventRequestUndecidable, Step: s.StepName, Payload: MustJSON(map[string]any{
		"suspensionId": s.ID, "deciders": deciders, "needed": needed, "escalatesNow": s.EscalatesAtOnce(deciders)})}
}

// EscalatesAtOnce reports whether the next rung of s's ladder comes due
// at once rather than at its time, deciders people being able to decide s
// now. When too few may, a rung that widens who may comes at once, and an
// outcome when nobody may decide at all (its comment then says so, see
// NobodyLeft). A reminder keeps its time: reminding people who cannot
// reach the quorum helps nobody sooner, and a ladder must not climb every
// rung the moment its request is asked.
func (s Suspension) EscalatesAtOnce(deciders int) bool {
	if !s.Undecidable(deciders) {
		return false
	}
	r, _, ok := s.Policy.NextRung(s.Escalated, s.SuspendedAt)
	return ok && (r.AddApprovers != nil || r.Outcome != "" && deciders == 0)
}

// NobodyLeft is the comment of an outcome that fires before its time
// because too few people may decide s: it says why, never a time that did
// not pass.
func NobodyLeft(s Suspension, deciders int) string {
	needed, _ := s.Policy.Needed()
	what := "1 approval"
	if needed != 1 {
		what = strconv.Itoa(needed) + " approvals"
	}
	return fmt.Sprintf("Nobody who may decide is left: %s needed, %d may decide", what, deciders)
}
