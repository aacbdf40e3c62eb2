package domain

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ApprovalPolicy is how a human decision is taken, declared with the
// request and enforced by the kernel: how many people must approve, how
// many rejections reject, who may not take part, and what a rejection
// must carry. The zero policy is one decision by one permitted person.
type ApprovalPolicy struct {
	// Quorum is how many distinct people must approve (1 when zero).
	Quorum int `json:"quorum,omitempty"`
	// Rejections is how many rejections reject (1 when zero).
	Rejections int `json:"rejections,omitempty"`
	// SeparationOfDuties keeps the person who started the run, and the
	// requesters (see RequesterPointer), from deciding.
	SeparationOfDuties bool `json:"separationOfDuties,omitempty"`
	// RequesterPointer is a JSON pointer into the run's input to the
	// email of the person the request is for; with SeparationOfDuties
	// that person may not decide.
	RequesterPointer string `json:"requesterPointer,omitempty"`
	// RejectRequiresComment refuses a rejection that says nothing.
	RejectRequiresComment bool `json:"rejectRequiresComment,omitempty"`
	// Escalation is the deadline ladder: rungs that fire once each, in
	// order, counted from when the request was asked, until it is
	// decided.
	Escalation []Rung `json:"escalation,omitempty"`
}

// Approvers are people named by email and a role, who may decide a
// request besides admins.
type Approvers struct {
	Role   Role     `json:"role,omitempty"`
	Emails []string `json:"emails,omitempty"`
}

// Rung is one step of a deadline ladder. It does one thing: reminds the
// people who may decide, widens who may, or decides in the system's
// name.
type Rung struct {
	// AfterMs is when it fires, in milliseconds after the request was
	// asked; each rung fires after the one before it.
	AfterMs int64 `json:"afterMs"`
	// Remind notifies the people who may decide again.
	Remind bool `json:"remind,omitempty"`
	// AddApprovers lets more people decide, and notifies them.
	AddApprovers *Approvers `json:"addApprovers,omitempty"`
	// Outcome decides the request: approve or reject an approval, or
	// resume an input with Data. Comment is the decision's comment.
	Outcome string          `json:"outcome,omitempty"`
	Comment string          `json:"comment,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Rung outcomes.
const (
	OutcomeApprove = "approve"
	OutcomeReject  = "reject"
	OutcomeResume  = "resume"
)

// maxRungs bounds a ladder.
const maxRungs = 10

// IsZero reports whether p asks for nothing beyond one decision.
func (p ApprovalPolicy) IsZero() bool {
	return p.Quorum == 0 && p.Rejections == 0 && !p.SeparationOfDuties && p.RequesterPointer == "" &&
		!p.RejectRequiresComment && len(p.Escalation) == 0
}

// NextRung returns the rung that fires after fired rungs have, and when,
// for a request asked at asked; ok is false when none is left.
func (p ApprovalPolicy) NextRung(fired int, asked time.Time) (r Rung, at time.Time, ok bool) {
	if fired < 0 || fired >= len(p.Escalation) {
		return Rung{}, time.Time{}, false
	}
	r = p.Escalation[fired]
	return r, asked.Add(time.Duration(r.AfterMs) * time.Millisecond), true
}

// Needed returns how many approvals approve and how many rejections
// reject.
func (p ApprovalPolicy) Needed() (approvals, rejections int) {
	return max(p.Quorum, 1), max(p.Rejections, 1)
}

// Several reports whether more than one vote may be needed to decide.
func (p ApprovalPolicy) Several() bool { return p.Quorum > 1 || p.Rejections > 1 }

// maxVoters bounds a quorum or a rejection count: a decision of more
// people than this is not one request.
const maxVoters = 100

// Check returns what is wrong with p on a suspension of kind, each error
// naming its field (quorum, rejections…). Quorum and rejections are for
// approvals; an input step takes separation of duties.
func (p ApprovalPolicy) Check(kind SuspensionKind) []FieldError {
	var errs []FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if p.Quorum < 0 || p.Quorum > maxVoters {
		add("quorum", "must be between 1 and %d", maxVoters)
	}
	if p.Rejections < 0 || p.Rejections > maxVoters {
		add("rejections", "must be between 1 and %d", maxVoters)
	}
	if kind != KindApproval {
		if p.Quorum > 1 || p.Rejections > 1 {
			add("quorum", "only an approval is decided by several people")
		}
		if p.RejectRequiresComment {
			add("rejectRequiresComment", "only an approval can be rejected")
		}
	}
	if p.RequesterPointer != "" {
		if _, err := ParsePointer(p.RequesterPointer); err != nil {
			add("requesterPointer", "%v", err)
		}
	}
	if len(p.Escalation) > maxRungs {
		add("escalation", "has at most %d rungs", maxRungs)
	}
	var after int64
	for i, r := range p.Escalation {
		at := fmt.Sprintf("escalation/%d", i)
		actions := 0
		for _, set := range []bool{r.Remind, r.AddApprovers != nil, r.Outcome != ""} {
			if set {
				actions++
			}
		}
		switch {
		case actions != 1:
			add(at, "does one thing: remind, addApprovers or outcome")
		case r.AfterMs <= after:
			add(at+"/afterMs", "must be after the rung before it (%d ms)", after)
		case r.AfterMs > MaxRungDelayMs:
			add(at+"/afterMs", "must be within a year (%d ms)", MaxRungDelayMs)
		case r.Outcome != "" && i != len(p.Escalation)-1:
			add(at+"/outcome", "decides the request, so it is the last rung")
		case r.Outcome == OutcomeResume && kind == KindApproval, (r.Outcome == OutcomeApprove || r.Outcome == OutcomeReject) && kind != KindApproval:
			add(at+"/outcome", "an approval's outcome is approve or reject; an input's is resume")
		case r.Outcome != "" && r.Outcome != OutcomeApprove && r.Outcome != OutcomeReject && r.Outcome != OutcomeResume:
			add(at+"/outcome", "must be approve, reject or resume")
		case r.Outcome != OutcomeResume && len(r.Data) > 0:
			add(at+"/data", "only a resume outcome takes data")
		case r.AddApprovers != nil && r.AddApprovers.Role == "" && len(r.AddApprovers.Emails) == 0:
			add(at+"/addApprovers", "names a role or emails")
		case r.AddApprovers != nil:
			if _, err := CheckApprovers(r.AddApprovers.Role, r.AddApprovers.Emails); err != nil {
				add(at+"/addApprovers", "%v", err)
			}
		}
		after = max(after, r.AfterMs)
	}
	return errs
}

// MaxRungDelayMs is the latest a rung may fire: a year after the request.
const MaxRungDelayMs = 366 * 24 * 3600 * 1000

// Requesters returns the email the policy's requester pointer finds in a
// run's input, lower-cased, or nothing when it finds none.
func (p ApprovalPolicy) Requesters(input json.RawMessage) []string {
	if p.RequesterPointer == "" {
		return nil
	}
	email, err := PointerString(input, p.RequesterPointer)
	if err != nil || !strings.Contains(email, "@") {
		return nil
	}
	return []string{strings.ToLower(strings.TrimSpace(email))}
}

// Channels through which a vote comes.
const (
	ChannelWeb    = "web"
	ChannelAPI    = "api"
	ChannelLink   = "link"
	ChannelMail   = "mail"
	ChannelSlack  = "slack"
	ChannelSystem = "system"
)

// Vote is one person's decision on an approval. Each person votes once;
// the approval resolves when a threshold of its policy is reached.
type Vote struct {
	// Voter is the person's email (lower case), or who acted for the
	// system.
	Voter    string    `json:"voter"`
	Decision string    `json:"decision"`
	Comment  string    `json:"comment,omitempty"`
	Channel  string    `json:"channel"`
	At       time.Time `json:"at"`
	// LinkCreator, for a vote cast through a decision link, is the email
	// of the member of staff who made the link. The vote counts as theirs
	// too: whoever makes links adds at most one vote in all.
	LinkCreator string `json:"linkCreator,omitempty"`
	// RequestKey is the Idempotency-Key of the request that voted: the
	// same request sent again is answered as before.
	RequestKey string `json:"-"`
}

// Tally counts an approval's votes against its policy.
type Tally struct {
	Approvals        int `json:"approvals"`
	Rejections       int `json:"rejections"`
	ApprovalsNeeded  int `json:"approvalsNeeded"`
	RejectionsNeeded int `json:"rejectionsNeeded"`
}

// TallyOf counts votes against p.
func TallyOf(p ApprovalPolicy, votes []Vote) Tally {
	t := Tally{}
	t.ApprovalsNeeded, t.RejectionsNeeded = p.Needed()
	for _, v := range votes {
		switch v.Decision {
		case DecisionApproved:
			t.Approvals++
		case DecisionRejected:
			t.Rejections++
		}
	}
	return t
}

// Outcome is the decision the votes have reached: approved, rejected or
// none yet.
func (t Tally) Outcome() string {
	switch {
	case t.Approvals >= t.ApprovalsNeeded:
		return DecisionApproved
	case t.Rejections >= t.RejectionsNeeded:
		return DecisionRejected
	}
	return ""
}

// VoteOf returns the vote of voter among votes, if any, whatever the
// spelling of their email (see SameEmail).
func VoteOf(votes []Vote, voter string) (Vote, bool) {
	i := slices.IndexFunc(votes, func(v Vote) bool { return SameEmail(v.Voter, voter) })
	if i < 0 {
		return Vote{}, false
	}
	return votes[i], true
}

// CountedFor returns the vote among votes that already counts for one of
// people: one they cast, or one cast through a decision link one of them
// made.
func CountedFor(votes []Vote, people ...string) (Vote, bool) {
	for _, v := range votes {
		for _, p := range people {
			if SameEmail(v.Voter, p) || SameEmail(v.LinkCreator, p) {
				return v, true
			}
		}
	}
	return Vote{}, false
}

// DutyError is a person whom an approval's separation of duties keeps
// from deciding it: errors.Is(err, ErrSeparationOfDuties).
type DutyError struct{ Message string }

func (e *DutyError) Error() string { return e.Message }

// Is makes a DutyError an ErrSeparationOfDuties.
func (e *DutyError) Is(target error) bool { return target == ErrSeparationOfDuties }

// checkDuties returns a *DutyError when s's separation of duties keeps
// the person (user id, email) from deciding: the run's starter, or a
// requester.
func (s Suspension) checkDuties(userID, email string) error {
	if !s.Policy.SeparationOfDuties {
		return nil
	}
	if userID != "" && s.RunStartedBy == userID {
		return &DutyError{Message: "You started this run, and this request separates duties: someone else must decide it."}
	}
	if slices.ContainsFunc(s.Requesters, func(r string) bool { return SameEmail(r, email) }) {
		return &DutyError{Message: "This request is about you, and it separates duties: someone else must decide it."}
	}
	return nil
}

// decideVote decides a decision on the pending approval t, with the votes
// cast on it so far: a repeat of the person's vote is answered as before,
// a second vote is refused, and a vote either resolves the approval (its
// threshold reached) or is kept.
func decideVote(req ResumeRequest, t Suspension, votes []Vote) (ResumeFate, error) {
	if revotes(req, votes) {
		return ResumeRepeat, nil
	}
	if err := alreadyVoted(req, t, votes); err != nil {
		return 0, err
	}
	comment := commentOf(req.Data)
	if req.Decision == DecisionRejected && t.Policy.RejectRequiresComment && strings.TrimSpace(comment) == "" {
		return 0, &ValidationError{Code: CodeValidation, Message: "A rejection of this request must say why.",
			Fields: []FieldError{{Field: "/comment", Message: "is required to reject"}}}
	}
	v := req.vote(comment)
	if TallyOf(t.Policy, append(slices.Clone(votes), v)).Outcome() == "" {
		return ResumeVote, nil
	}
	return ResumeApply, nil
}

// alreadyVoted refuses a decision by a person who has voted on t, or
// through a link whose creator has: a vote through a link counts for the
// link's person and for its creator alike.
func alreadyVoted(req ResumeRequest, t Suspension, votes []Vote) error {
	if req.Decision == "" {
		return nil
	}
	prior, ok := CountedFor(votes, req.By, req.linkCreator())
	if !ok {
		return nil
	}
	msg := fmt.Sprintf("%s already voted on suspension %s (%s at %s)", prior.Voter, t.ID, prior.Decision, prior.At.Format(time.RFC3339))
	if prior.LinkCreator != "" {
		msg = fmt.Sprintf("%s already voted on suspension %s (%s at %s) through a decision link %s made, which counts for both", prior.Voter, t.ID, prior.Decision, prior.At.Format(time.RFC3339), prior.LinkCreator)
	}
	return &ConflictError{Code: CodeAlreadyVoted, Message: msg, Detail: map[string]any{"suspensionId": t.ID, "vote": prior}}
}

// linkCreator is the email of the person who made the decision link req
// comes through, if it does.
func (req ResumeRequest) linkCreator() string {
	if req.LinkCreator == nil {
		return ""
	}
	return strings.ToLower(req.LinkCreator.Email)
}

// vote is the vote req casts.
func (req ResumeRequest) vote(comment string) Vote {
	return Vote{Voter: strings.ToLower(req.By), Decision: req.Decision, Comment: comment, Channel: cmp.Or(req.Channel, ChannelAPI), At: req.Now,
		LinkCreator: req.linkCreator(), RequestKey: req.RequestKey}
}

// CastVote returns the vote a decision casts and, when with it the votes
// reach a decision, the resume data of that decision: its outcome, the
// comment of the vote that decided it, and every vote. A decision the
// system takes (req.System) casts no vote and decides with the votes cast
// so far.
func CastVote(req ResumeRequest, p ApprovalPolicy, votes []Vote) (*Vote, json.RawMessage) {
	if req.System {
		return nil, MustJSON(ApprovalData{Approved: req.Decision == DecisionApproved, Comment: commentOf(req.Data), Votes: votes})
	}
	v := req.vote(commentOf(req.Data))
	all := append(slices.Clone(votes), v)
	outcome := TallyOf(p, all).Outcome()
	if outcome == "" {
		return &v, nil
	}
	return &v, MustJSON(ApprovalData{Approved: outcome == DecisionApproved, Comment: v.Comment, Votes: all})
}

// commentOf reads the comment of a decision's data ({"approved", "comment"}).
func commentOf(data json.RawMessage) string {
	var d ApprovalData
	_ = json.Unmarshal(data, &d)
	return d.Comment
}
