package domain

import (
	"context"
	"slices"
	"strings"
	"time"
)

// MailPreference is how a person hears of requests by mail.
type MailPreference string

// Mail preferences. The default (unset) mails requests that name a person
// at once and gathers the requests of their role into the daily digest.
const (
	MailDefault     MailPreference = ""
	MailImmediately MailPreference = "immediately"
	MailDigest      MailPreference = "digest"
	MailOff         MailPreference = "off"
)

// ParseMailPreference reads a preference as a form or the API sends it;
// "default" and "" are the default. Anything else is a *ValidationError
// in words a person reads.
func ParseMailPreference(s string) (MailPreference, error) {
	switch p := MailPreference(strings.TrimSpace(s)); p {
	case "default", MailDefault:
		return MailDefault, nil
	case MailImmediately, MailDigest, MailOff:
		return p, nil
	}
	return "", Invalid("choose how you hear of requests: immediately, in a daily digest, or not at all")
}

// MailTiming is when a person is mailed about one request.
type MailTiming int

// Mail timings.
const (
	MailNever MailTiming = iota
	MailNow
	MailInDigest
)

// Timing is when a person with preference p is mailed about a request:
// personal requests name them (as assignee or approver), others are for
// everyone of their role.
func (p MailPreference) Timing(personal bool) MailTiming {
	switch p {
	case MailOff:
		return MailNever
	case MailImmediately:
		return MailNow
	case MailDigest:
		return MailInDigest
	}
	if personal {
		return MailNow
	}
	return MailInDigest
}

// WaitsForPerson reports whether a person acts on a suspension of this
// kind (an approval or an input), so that people are told of it.
func (k SuspensionKind) WaitsForPerson() bool { return k == KindApproval || k == KindInput }

// PersonKinds are the kinds of suspension a person acts on (see
// WaitsForPerson); every other kind waits for a machine.
var PersonKinds = []SuspensionKind{KindApproval, KindInput}

// Waits selects suspensions by what they wait for: WaitsAny every one,
// WaitsPerson those a person is asked (approvals and inputs), WaitsMachine
// those a machine resumes (timers, webhooks, signals, async steps).
type Waits string

// The selections of Waits.
const (
	WaitsAny     Waits = ""
	WaitsPerson  Waits = "person"
	WaitsMachine Waits = "machine"
)

// Has reports whether a suspension of kind k is among those w selects.
func (w Waits) Has(k SuspensionKind) bool {
	switch w {
	case WaitsPerson:
		return k.WaitsForPerson()
	case WaitsMachine:
		return !k.WaitsForPerson()
	}
	return true
}

// MailRecipient is a person to be told of a suspension; Personal when it
// names them rather than their role.
type MailRecipient struct {
	User     User
	Personal bool
}

// MailRecipients says who of users is told of s: the people it names (its
// assignee and approvers, and everyone of a role a rung of its ladder
// added) or, when it names none who may act, everyone of its role — users
// of its approver role, or staff for a suspension that names no one. Only
// enabled users who may act on it (CheckActor) are told.
func MailRecipients(s Suspension, users []User) []MailRecipient {
	if !s.Kind.WaitsForPerson() {
		return nil
	}
	var named, role []MailRecipient
	for _, u := range users {
		if u.Disabled || s.CheckActor(u) != nil {
			continue
		}
		switch {
		case (s.Assignee != "" && strings.EqualFold(s.Assignee, u.Email)) || s.names(u.Email) || s.escalatedTo(u.Role):
			named = append(named, MailRecipient{User: u, Personal: true})
		case s.ApproverRole != "" && u.Role == s.ApproverRole,
			s.ApproverRole == "" && u.Role.Staff():
			role = append(role, MailRecipient{User: u})
		}
	}
	if len(named) > 0 {
		return named
	}
	return slices.Clip(role)
}

// MailMessage is a one-off mail to one address, sent through the same
// durable outbox as request mail (a password-reset link, say). Key, when
// set, is the Message-ID's local part, so that a mail sent again after a
// crash is recognisable as the same one.
type MailMessage struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
	HTML    string `json:"html,omitempty"`
	// Link is what the message is about (a reset link), written to the
	// server log instead when no SMTP server is configured.
	Link string `json:"link,omitempty"`
	Key  string `json:"key,omitempty"`
	// Reset makes the message a request for a password-reset link for the
	// enabled account whose email is To, which the mail dispatcher issues
	// and writes as it sends: the link is never stored whole, and an
	// address with no enabled account is sent nothing. Text, HTML and Link
	// are then empty.
	Reset bool `json:"reset,omitempty"`
}

// Mailer sends one-off mail through the durable outbox: Queue returns once
// the message is committed, and it is sent (with retries) afterwards.
type Mailer interface {
	Queue(ctx context.Context, m MailMessage) error
}

// MailKind is what a queued mail is about.
type MailKind string

// Mail kinds.
const (
	MailKindRequest MailKind = "request" // one new request, to one person
	MailKindDigest  MailKind = "digest"  // a person's daily digest
	MailKindMessage MailKind = "message" // a MailMessage
)

// MailJob is one claimed mail: to one person, about one request, a day's
// digest, or a one-off message. Attempt counts claims, this one included.
type MailJob struct {
	ID      int64
	Attempt int
	Kind    MailKind
	// To is the recipient; only Email is set for a one-off message,
	// unless it is a reset request (MailMessage.Reset) that found an
	// enabled account with that email.
	To User
	// Suspension is the request of a request mail.
	Suspension *Suspension
	// AskedBy is who asks: the name, else the email, of the person who
	// started the request's run; empty when the system did, or their
	// account is gone.
	AskedBy string
	// Day (YYYY-MM-DD, UTC) and Digest, for a digest: the requests held
	// for it that are still pending, oldest first.
	Day    string
	Digest []Suspension
	// Message is the content of a one-off message.
	Message  *MailMessage
	GiveUpAt time.Time
	// Round is 0 for a request's first mail, n for the reminder its
	// ladder's rung n-1 sends.
	Round int
}

// MailOutcome is what became of a claimed mail.
type MailOutcome struct {
	ID      int64
	Attempt int
	// Sent is true for a mail delivered to the SMTP server (or the log),
	// and for a digest with nothing left to tell.
	Sent bool
	// RetryAt, when Sent is false, is when to try again; zero gives up
	// (the mail is marked failed).
	RetryAt time.Time
	Error   string
}

// MailRound is one round of a mail dispatcher, which the outbox does in
// one transaction: it records the outcomes of the last round's sends,
// claims at most Limit due mails for Worker until Now+Lease, and turns as
// many queued intents as it has room left into deliveries (holding digest
// mail for the digest at NextDigest), claiming those due at once. A Limit
// of zero only records.
type MailRound struct {
	Worker          string
	Now, NextDigest time.Time
	Lease           time.Duration
	Limit           int
	Finished        []MailOutcome
	// Slack makes the Slack messages of the requests fanned out (see
	// SlackStore), for a server that posts to Slack.
	Slack bool
}

// MailClaim is what a MailRound claimed, and how many intents it fanned
// out.
type MailClaim struct {
	Jobs      []MailJob
	FannedOut int
}

// MailPreferences keeps each person's mail preference.
type MailPreferences interface {
	// MailPreference returns the user's preference; ErrNotFound for no
	// such user.
	MailPreference(ctx context.Context, userID string) (MailPreference, error)
	// SetMailPreference sets it; ErrNotFound for no such user.
	SetMailPreference(ctx context.Context, userID string, p MailPreference, now time.Time) error
}
