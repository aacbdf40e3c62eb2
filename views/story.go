package views

import (
	"cmp"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// StoryEntry is one event of a run told in people's words: a sentence,
// perhaps naming something to open, perhaps quoting a comment or an error.
type StoryEntry struct {
	Text     string
	Link     string // what the sentence names, "" for nothing
	LinkText string
	Quote    string
	// Tone colours the entry's marker: "good", "bad", "wait", "info" or "".
	Tone string
	At   time.Time
}

// Story tells a run's events in order, oldest first, in people's words.
// The suspensions give the requests the events name their titles, the
// decisions their comments, and the votes cast before a decision entries
// of their own. names gives people's names for their emails.
func Story(run domain.Run, events []domain.Event, sps []domain.Suspension, names Names) []StoryEntry {
	byID := make(map[string]domain.Suspension, len(sps))
	for _, s := range sps {
		byID[s.ID] = s
	}
	out := make([]StoryEntry, 0, len(events))
	for _, e := range events {
		entry := tell(run, e, byID, names)
		entry.At = e.CreatedAt
		out = append(out, entry)
	}
	for _, v := range votesTold(sps, names) {
		at := len(out)
		for i, e := range out {
			if e.At.After(v.At) {
				at = i
				break
			}
		}
		out = slices.Insert(out, at, v)
	}
	return out
}

// Names maps people's emails (lower case) to their names.
type Names map[string]string

// Of is who an email names: their name, or the email when none is known.
func (n Names) Of(email string) string {
	if name := n[strings.ToLower(email)]; name != "" {
		return name
	}
	return email
}

// resumer names who or what resumed a wait.
func (n Names) resumer(by string) string {
	switch by {
	case "":
		return "someone"
	case "timer":
		return "the timer"
	case "webhook":
		return "a call to its resume URL"
	}
	return n.Of(by)
}

// votesTold tells the votes cast on the requests, but the one that
// decided a request, which its decision's event tells.
func votesTold(sps []domain.Suspension, names Names) []StoryEntry {
	var out []StoryEntry
	for _, s := range sps {
		for _, v := range s.Votes {
			if s.ResumedAt != nil && strings.EqualFold(v.Voter, s.ResumedBy) {
				continue
			}
			verb, tone := "approve", "good"
			if v.Decision == domain.DecisionRejected {
				verb, tone = "reject", "bad"
			}
			out = append(out, StoryEntry{Text: names.Of(v.Voter) + " voted to " + verb + " " + requestCalled(s),
				Quote: v.Comment, Tone: tone, At: v.At})
		}
	}
	return out
}

// eventFacts are the payload fields the kernel's events carry.
type eventFacts struct {
	SuspensionID string          `json:"suspensionId"`
	ResumedBy    string          `json:"resumedBy"`
	CancelledBy  string          `json:"cancelledBy"`
	RetriedBy    string          `json:"retriedBy"`
	Count        int             `json:"count"`
	Reason       string          `json:"reason"`
	Message      string          `json:"message"` // of a RUN_FAILED's error
	Error        json.RawMessage `json:"error"`   // a string or a RunError
	// A wait on several things: its mode, its branches (when it pauses),
	// the branch that completed (with its decision, and how many of the
	// group's have) and, for any, the winner and the branches cancelled.
	Mode     domain.GroupMode `json:"mode"`
	Group    string           `json:"group"`
	Branches []struct {
		Branch       string `json:"branch"`
		SuspensionID string `json:"suspensionId"`
	} `json:"branches"`
	Branch    string `json:"branch"`
	Decision  string `json:"decision"`
	Completed int    `json:"completed"`
	Of        int    `json:"of"`
	Winner    string `json:"winner"`
	// A request's ladder: the rung that fired and what it did; or too few
	// people to decide it.
	Rung         int      `json:"rung"`
	Action       string   `json:"action"`
	Deciders     int      `json:"deciders"`
	Needed       int      `json:"needed"`
	EscalatesNow bool     `json:"escalatesNow"`
	Cancelled    []string `json:"cancelled"`
}

func tell(run domain.Run, e domain.Event, sps map[string]domain.Suspension, names Names) StoryEntry {
	var f eventFacts
	_ = json.Unmarshal(e.Payload, &f) // a payload that is not an object tells nothing more
	step := quoted(e.Step)
	switch e.Type {
	case domain.EventRunCreated:
		return StoryEntry{Text: "Started by " + StartedBy(run), Tone: "info"}
	case domain.EventStepStarted:
		return StoryEntry{Text: "Step " + step + " started"}
	case domain.EventStepCompleted:
		return StoryEntry{Text: "Step " + step + " completed", Tone: "good"}
	case domain.EventStepInvoked:
		return StoryEntry{Text: "Step " + step + " comes next"}
	case domain.EventStepRetrying:
		return StoryEntry{Text: "Step " + step + " failed; it will be tried again", Quote: errorText(f.Error), Tone: "wait"}
	case domain.EventStepFailed:
		return StoryEntry{Text: "Step " + step + " failed", Quote: errorText(f.Error), Tone: "bad"}
	case domain.EventWorkflowPaused:
		if f.Mode != "" {
			return waitingOnGroup(f, sps)
		}
		return waiting(sps[f.SuspensionID], f.SuspensionID)
	case domain.EventRequestEscalated:
		return escalated(e, sps[f.SuspensionID])
	case domain.EventRequestUndecidable:
		text := "Too few people may decide " + requestCalled(sps[f.SuspensionID]) + ": " + strconv.Itoa(f.Deciders) + " of the " + strconv.Itoa(f.Needed) + " it needs"
		if f.EscalatesNow {
			text += "; it escalates now"
		}
		return StoryEntry{Text: text, Tone: "bad"}
	case domain.EventBranchCompleted:
		return branchCompleted(f, sps, names)
	case domain.EventRunResumed:
		if f.Winner != "" {
			text := branchName(f.SuspensionID, f.Winner, sps) + " came first"
			if len(f.Cancelled) > 0 {
				text += "; " + list(quotedAll(f.Cancelled)) + " no longer needed"
			}
			return StoryEntry{Text: text, Tone: "info"}
		}
		if f.Mode == domain.GroupAll {
			return StoryEntry{Text: "Everything it waited for is done; the run goes on", Tone: "info"}
		}
		return StoryEntry{Text: "Resumed by " + names.resumer(f.ResumedBy), Tone: "info"}
	case domain.EventReviewApproved:
		return StoryEntry{Text: "Approved by " + names.resumer(f.ResumedBy), Quote: comment(sps[f.SuspensionID]), Tone: "good"}
	case domain.EventReviewRejected:
		return StoryEntry{Text: "Rejected by " + names.resumer(f.ResumedBy), Quote: comment(sps[f.SuspensionID]), Tone: "bad"}
	case domain.EventSuspensionExpire:
		return StoryEntry{Text: "The wait ended: its deadline passed", Tone: "wait"}
	case domain.EventEarlyResumeRefused:
		return StoryEntry{Text: "A resume that came before the pause did not fit it and was refused", Tone: "wait"}
	case domain.EventCommandsDropped:
		return StoryEntry{Text: plural(f.Count, "further step") + " dropped: " + f.Reason}
	case domain.EventRunSucceeded:
		return StoryEntry{Text: "The run succeeded", Tone: "good"}
	case domain.EventRunFailed:
		return StoryEntry{Text: "The run failed", Quote: f.Message, Tone: "bad"}
	case domain.EventRunRetried:
		return StoryEntry{Text: "Retried by " + names.Of(f.RetriedBy) + " from step " + step, Quote: f.Reason, Tone: "info"}
	case domain.EventRunCancelled:
		if f.CancelledBy == "" {
			return StoryEntry{Text: "Cancelled", Quote: f.Reason, Tone: "bad"}
		}
		return StoryEntry{Text: "Cancelled by " + names.Of(f.CancelledBy), Quote: f.Reason, Tone: "bad"}
	}
	if e.Step == "" {
		return StoryEntry{Text: "Recorded " + quoted(e.Type)}
	}
	return StoryEntry{Text: "Step " + step + " recorded " + quoted(e.Type)}
}

// waiting tells a pause: what the run waits for, linking to the request.
func waiting(s domain.Suspension, id string) StoryEntry {
	entry := StoryEntry{Tone: "wait"}
	if id != "" {
		entry.Link = SuspensionURL(id)
	}
	switch s.Kind {
	case domain.KindDelay:
		entry.Text, entry.Link = "Waiting for a timer", ""
		if s.WakeAt != nil {
			entry.Text += ", due " + s.WakeAt.UTC().Format("2006-01-02 15:04 UTC")
		}
	case domain.KindWebhook:
		entry.Text, entry.LinkText = "Waiting for a call to its resume URL:", RequestName(s)
	case domain.KindCallback:
		entry.Text, entry.LinkText = "Waiting for an outside service to report back:", RequestName(s)
	case domain.KindSignal:
		entry.Text, entry.LinkText = "Waiting for a signal:", RequestName(s)
	default:
		entry.Text, entry.LinkText = "Waiting for", RequestName(s)
	}
	if entry.LinkText == "" && entry.Link != "" {
		entry.LinkText = "the request"
	}
	return entry
}

// RequestName is what people call a suspension: its title, or the human
// name of its reason; "" when it has neither.
func RequestName(s domain.Suspension) string { return cmp.Or(s.Title, s.ReasonName()) }

// SuspensionURL is the page of a suspension.
func SuspensionURL(id string) string { return "/suspensions/" + url.PathEscape(id) }

// comment is the comment given with a decision, if any.
func comment(s domain.Suspension) string {
	var d domain.ApprovalData
	if json.Unmarshal(s.ResumeData, &d) != nil {
		return ""
	}
	return d.Comment
}

// errorText is the message of a step's error, a string or a RunError.
func errorText(raw json.RawMessage) string {
	var msg string
	if json.Unmarshal(raw, &msg) == nil {
		return msg
	}
	var re domain.RunError
	if json.Unmarshal(raw, &re) == nil {
		return re.Message
	}
	return ""
}

// branchName is what people call a branch of a group: its request's
// title when the story has it, else its name.
func branchName(id, name string, sps map[string]domain.Suspension) string {
	if s, ok := sps[id]; ok {
		return quoted(BranchLabel(s))
	}
	return quoted(name)
}

// requestCalled names a request in a sentence: its title in quotes, or
// "the request".
func requestCalled(s domain.Suspension) string {
	if n := RequestName(s); n != "" {
		return quoted(n)
	}
	return "the request"
}

// escalated tells a rung of a request's ladder firing.
func escalated(e domain.Event, s domain.Suspension) StoryEntry {
	var f eventFacts
	_ = json.Unmarshal(e.Payload, &f)
	what := requestCalled(s)
	switch f.Action {
	case "remind":
		return StoryEntry{Text: "No decision yet on " + what + ": the people who may decide were reminded", Tone: "wait"}
	case "addApprovers":
		return StoryEntry{Text: "No decision yet on " + what + ": more people may now decide it", Tone: "wait"}
	case domain.OutcomeApprove:
		return StoryEntry{Text: "No decision in time on " + what + ": its deadline rule approved it", Tone: "info"}
	case domain.OutcomeReject:
		return StoryEntry{Text: "No decision in time on " + what + ": its deadline rule rejected it", Tone: "bad"}
	}
	return StoryEntry{Text: "No answer in time on " + what + ": its deadline rule gave one", Tone: "info"}
}

// waitingOnGroup tells a pause on several things.
func waitingOnGroup(f eventFacts, sps map[string]domain.Suspension) StoryEntry {
	names := make([]string, len(f.Branches))
	for i, b := range f.Branches {
		names[i] = branchName(b.SuspensionID, b.Branch, sps)
	}
	if f.Mode == domain.GroupAny {
		return StoryEntry{Text: "Waiting for whichever comes first of " + list(names), Tone: "wait"}
	}
	return StoryEntry{Text: "Waiting for all of " + list(names), Tone: "wait"}
}

// branchCompleted tells one branch of a group completing.
func branchCompleted(f eventFacts, sps map[string]domain.Suspension, names Names) StoryEntry {
	entry := StoryEntry{Tone: "good", Link: SuspensionURL(f.SuspensionID), LinkText: branchName(f.SuspensionID, f.Branch, sps)}
	switch f.Decision {
	case domain.DecisionApproved:
		entry.Text = "Approved by " + names.resumer(f.ResumedBy) + ":"
	case domain.DecisionRejected:
		entry.Text, entry.Tone = "Rejected by "+names.resumer(f.ResumedBy)+":", "bad"
	default:
		entry.Text = "Done, by " + names.resumer(f.ResumedBy) + ":"
	}
	if f.Mode == domain.GroupAll && f.Of > 0 {
		entry.LinkText += " (" + strconv.Itoa(f.Completed) + " of " + strconv.Itoa(f.Of) + ")"
	}
	return entry
}

func quotedAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quoted(n)
	}
	return out
}

// list joins names as a sentence does: "a", "a and b", "a, b and c".
func list(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// quoted puts a name in typographic quotes.
func quoted(name string) string { return "“" + name + "”" }
