package views

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
)

// AuditNames is what the audit page knows of the people, keys and
// requests its entries refer to.
type AuditNames struct {
	Users map[string]domain.User // by id
	// ByEmail finds a user by lower-case email (sign-in entries carry
	// only the email typed).
	ByEmail map[string]domain.User
	Keys    map[string]domain.APIKey // by id
	// Titles are the titles of the suspensions referred to, by id; a
	// suspension missing here has been deleted with its run.
	Titles map[string]string
}

// Words is a piece of an audit sentence: text, a link when URL is set,
// emphasised (a request's title) when Em is set.
type Words struct {
	Text  string
	URL   string
	Em    bool
	Title string // a tooltip
}

// AuditRow is an audit entry told as a sentence, with its raw data kept
// for the details.
type AuditRow struct {
	Entry    domain.AuditEntry
	Sentence []Words
	// Data is the entry's data as indented JSON.
	Data string
	// Changes are what the action changed, from its data's "changes"
	// object; none for entries written without one.
	Changes []Change
}

// Change is one field an action changed: "Role: reviewer → admin".
type Change struct{ Label, From, To string }

// NewAuditRow tells e as a sentence: "Rita Reviewer approved *Expense:
// Flight Lisbon* via the web app".
func NewAuditRow(e domain.AuditEntry, n AuditNames) AuditRow {
	var data map[string]any
	_ = json.Unmarshal(e.Data, &data) // an entry without readable data is still told
	t := teller{e: e, n: n, data: data}
	row := AuditRow{Entry: e, Sentence: t.sentence(), Data: string(e.Data), Changes: t.changes()}
	var buf bytes.Buffer
	if json.Indent(&buf, e.Data, "", "  ") == nil {
		row.Data = buf.String()
	}
	return row
}

type teller struct {
	e    domain.AuditEntry
	n    AuditNames
	data map[string]any
}

func (t teller) str(key string) string {
	if v, ok := t.data[key].(string); ok {
		return v
	}
	return ""
}

func text(s string) Words { return Words{Text: s} }

func (t teller) sentence() []Words {
	actor := t.actor()
	if words, ok := t.decisionOrRun(actor); ok {
		return words
	}
	if words, ok := t.account(actor); ok {
		return words
	}
	return t.people(actor)
}

// decisionOrRun tells what was done to a request or a run.
func (t teller) decisionOrRun(actor Words) ([]Words, bool) {
	e := t.e
	switch e.Action {
	case "suspension.approve":
		return []Words{actor, text("approved"), t.request(e.Subject), text(t.via())}, true
	case "suspension.reject":
		return []Words{actor, text("rejected"), t.request(e.Subject), text(t.via())}, true
	case "suspension.resume":
		return []Words{actor, text("answered"), t.request(e.Subject), text(t.via())}, true
	case "suspension.link_created":
		return []Words{actor, text("made a decision link to"), t.request(e.Subject), text("for"), {Text: t.str("email"), Em: true}, text(t.via())}, true
	case "suspension.link_revoked":
		return []Words{actor, text("withdrew a decision link to"), t.request(e.Subject), text(t.via())}, true
	case "document.upload":
		return []Words{actor, text("uploaded"), {Text: t.str("filename"), Em: true}, text("to"), t.request(t.str("suspensionId"))}, true
	case "run.start":
		if id := t.str("schedule"); id != "" {
			if m, _ := t.data["manual"].(bool); m {
				return []Words{actor, text("started"), t.run(e.Subject), text("now from schedule"), t.schedule(id)}, true
			}
			return []Words{text("Schedule"), t.schedule(id), text("started"), t.run(e.Subject), text("for " + t.str("scheduledAt"))}, true
		}
		return []Words{actor, text("started"), t.run(e.Subject), text(t.via())}, true
	case "run.cancel":
		return []Words{actor, text("cancelled"), t.run(e.Subject), text(t.via())}, true
	case "run.signal":
		return []Words{actor, text("sent the signal"), {Text: t.str("name"), Em: true}, text("to"), t.run(e.Subject), text(t.via())}, true
	case "run.delete":
		words := []Words{actor, text("deleted a run of " + cmp.Or(e.WorkflowID, "a workflow")), text(t.via())}
		if reason := t.str("reason"); reason != "" {
			words = append(words, text("— “"+reason+"”"))
		}
		return words, true
	}
	return nil, false
}

// account tells sign-ins and password changes.
func (t teller) account(actor Words) ([]Words, bool) {
	e := t.e
	switch e.Action {
	case "login":
		if p := t.str("provider"); p != "" {
			return []Words{actor, text("signed in with " + p)}, true
		}
		return []Words{actor, text("signed in")}, true
	case "login.failed":
		if p := t.str("provider"); p != "" {
			why := text("with " + p + " was refused: " + signInReason(t.str("reason")))
			if e.ActorEmail == "" {
				return []Words{text("A sign-in"), why}, true
			}
			return []Words{text("A sign-in as"), actor, why}, true
		}
		return []Words{text("A sign-in as"), actor, text("failed: wrong password or no such active account")}, true
	case "login.throttled":
		return []Words{text("A sign-in as"), actor, text("was refused: too many failed attempts")}, true
	case "logout":
		return []Words{actor, text("signed out")}, true
	case "password.change":
		return []Words{actor, text("changed their password")}, true
	case "password.change_failed":
		return []Words{actor, text("gave a wrong current password when changing it")}, true
	case "password.reset_issue":
		return []Words{actor, text("issued a password-reset link for"), t.person(e.Subject, t.str("email"))}, true
	case "password.reset_request":
		if t.str("mail") == "queued" { // the account is looked up later, by the mail dispatcher
			return []Words{actor, text("asked for a password-reset link by mail; it is sent if there is such an active account")}, true
		}
		if e.Subject == "" {
			return []Words{actor, text("asked for a password-reset link by mail; there is no such active account, so none was sent")}, true
		}
		return []Words{actor, text("asked for a password-reset link by mail")}, true
	case "password.reset":
		if by := t.str("issuedBy"); by != "" {
			return []Words{actor, text("chose a new password with a reset link issued by"), t.person(by, "")}, true
		}
		return []Words{actor, text("chose a new password with a reset link sent by mail")}, true
	case "audit.export":
		return []Words{actor, text("exported the audit log as " + strings.ToUpper(cmp.Or(t.str("format"), "a file")))}, true
	}
	return nil, false
}

// people tells changes to accounts and API keys, and anything else.
func (t teller) people(actor Words) []Words {
	e := t.e
	switch e.Action {
	case "user.create":
		return []Words{actor, text("got an account as " + t.str("role") + " by signing in with " + t.str("provider"))}
	case "user.invite":
		return []Words{actor, text("invited"), t.person(e.Subject, t.str("email")), text("as " + t.str("role"))}
	case "user.update":
		access := "active"
		if d, _ := t.data["disabled"].(bool); d {
			access = "disabled"
		}
		return []Words{actor, text("set"), t.person(e.Subject, t.str("email")), text("to " + t.str("role") + ", account " + access)}
	case "schedule.create":
		return []Words{actor, text("created schedule"), t.schedule(t.str("schedule")), text(t.via())}
	case "schedule.update":
		return []Words{actor, text("changed schedule"), t.schedule(t.str("schedule")), text(t.via())}
	case "schedule.pause":
		return []Words{actor, text("paused schedule"), t.schedule(t.str("schedule")), text(t.via())}
	case "schedule.resume":
		return []Words{actor, text("resumed schedule"), t.schedule(t.str("schedule")), text(t.via())}
	case "schedule.delete":
		return []Words{actor, text("deleted schedule"), {Text: t.str("schedule"), Em: true}, text(t.via())}
	case "apikey.create":
		return []Words{actor, text("created API key"), {Text: t.str("name"), Em: true}, text("for " + t.str("owner"))}
	case "apikey.revoke":
		name := t.str("name")
		if name == "" {
			name = t.n.Keys[e.Subject].Name
		}
		return []Words{actor, text("revoked API key"), {Text: cmp.Or(name, e.Subject), Em: true}}
	}
	words := []Words{actor, {Text: e.Action, Title: "an action this page has no sentence for"}}
	if e.Subject != "" {
		words = append(words, text("on "+e.Subject))
	}
	return words
}

// actor names who acted: an API key by its name, a resume URL's caller,
// or a person by name when known.
func (t teller) actor() Words {
	e := t.e
	if key := t.str("key"); key != "" && t.str("via") == "api" {
		return Words{Text: "API key " + key, Title: "owned by " + e.ActorEmail}
	}
	if e.ActorID == "" && e.ActorEmail == "webhook" {
		return text("A caller of its resume URL")
	}
	return t.person(e.ActorID, e.ActorEmail)
}

// person names a user by name, linked to their row on the users page, or
// by the email given.
func (t teller) person(id, email string) Words {
	u, ok := t.n.Users[id]
	if !ok && id == "" && email != "" {
		u, ok = t.n.ByEmail[strings.ToLower(email)]
	}
	if !ok {
		return Words{Text: cmp.Or(email, "Someone")}
	}
	return Words{Text: cmp.Or(u.Name, u.Email), URL: "/admin/users#user-" + u.ID, Title: u.Email}
}

// request names a suspension by its title, linked to its page.
func (t teller) request(id string) Words {
	title, ok := t.n.Titles[id]
	switch {
	case id == "":
		return text("a request")
	case !ok:
		return Words{Text: "a request of " + cmp.Or(t.e.WorkflowID, "a workflow") + " (since deleted)"}
	case title == "":
		return Words{Text: "a request of " + cmp.Or(t.e.WorkflowID, "a workflow"), URL: SuspensionURL(id)}
	}
	return Words{Text: title, URL: SuspensionURL(id), Em: true}
}

// run names a run by its workflow, linked to its page.
func (t teller) run(id string) Words {
	return Words{Text: "a run of " + cmp.Or(t.e.WorkflowID, "a workflow"), URL: "/runs/" + id}
}

// schedule names a schedule, linked to its page.
func (t teller) schedule(id string) Words {
	return Words{Text: id, URL: ScheduleURL(id), Em: true}
}

// via says how an action came: the API, a resume URL, or the web app.
func (t teller) via() string {
	switch t.str("via") {
	case "api":
		return "via the API"
	case "waitpoint":
		return "through its resume URL"
	case "link":
		return "through a decision link"
	case "mail":
		return "from the mail's button"
	case "":
		return "via the web app"
	}
	return fmt.Sprintf("via %s", t.str("via"))
}

// changeLabels name the fields a change may name (an account's update
// changes its role or whether it is disabled); a field not here is shown
// by its own name.
var changeLabels = map[string]string{"role": "Role", "disabled": "Account"}

// changes reads the data's "changes" object, {"role": {"from": "reviewer",
// "to": "admin"}}, as a list in the order of the labels.
func (t teller) changes() []Change {
	fields, _ := t.data["changes"].(map[string]any)
	out := make([]Change, 0, len(fields))
	for field, v := range fields {
		ft, _ := v.(map[string]any)
		out = append(out, Change{Label: cmp.Or(changeLabels[field], field), From: changeValue(field, ft["from"]), To: changeValue(field, ft["to"])})
	}
	slices.SortFunc(out, func(a, b Change) int { return cmp.Compare(a.Label, b.Label) })
	return out
}

// changeValue says a changed value in words: an account is active or
// disabled rather than false or true; nothing is "none".
func changeValue(field string, v any) string {
	switch v := v.(type) {
	case nil:
		return "none"
	case bool:
		switch {
		case field == "disabled" && v:
			return "disabled"
		case field == "disabled":
			return "active"
		case v:
			return "yes"
		}
		return "no"
	case string:
		return cmp.Or(v, "none")
	}
	return fmt.Sprint(v)
}

// signInReason tells why a sign-in with the identity provider was refused.
func signInReason(reason string) string {
	switch reason {
	case "state":
		return "it did not start in this browser or took too long"
	case "declined":
		return "the provider did not sign the person in"
	case "code":
		return "the provider refused its code (used already or expired)"
	case "expired":
		return "its ID token had expired"
	case "unverified_token":
		return "its ID token could not be verified"
	case "unverified_email":
		return "the provider has not verified the email"
	case "not_invited":
		return "no account has that email"
	case "no_role":
		return "the provider gives no group with a Tollgate role"
	case "disabled":
		return "the account is disabled"
	case "unreachable":
		return "the provider could not be reached"
	}
	return "Tollgate could not finish it"
}
