package web

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// maxPageBulk is how many items a bulk action from a page takes: the
// people who need more use the API or the CLI, which stream their
// progress.
const maxPageBulk = 500

// pageBulkForm describes a bulk form on a page: the field its buttons
// send (one of choices), its text field and that field's limit, and how
// its items and list are called.
type pageBulkForm struct {
	choice    string
	choices   [2]string
	labels    [2]string // the buttons' words
	text      string
	maxText   int
	noun      string // "request"
	list, cli string // "the inbox"; the CLI command that takes more
}

// pageBulk is what a bulk form sent.
type pageBulk struct {
	ids          []string
	choice, text string
}

// readPageBulk reads a bulk form, answering a person's mistake (nothing
// ticked, no choice, too many, too long a text) with a page that says so.
func (s *Server) readPageBulk(w http.ResponseWriter, r *http.Request, v *views.Viewer, f pageBulkForm) (pageBulk, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, s.MaxBody)
	if err := r.ParseForm(); err != nil {
		s.renderError(w, r, http.StatusBadRequest, "The form could not be read", "Go back to "+f.list+" and try again.", v)
		return pageBulk{}, false
	}
	b := pageBulk{ids: r.PostForm["id"], choice: r.PostForm.Get(f.choice), text: strings.TrimSpace(r.PostForm.Get(f.text))}
	choose := "Choose " + f.labels[0] + " or " + f.labels[1]
	var heading, message string
	switch {
	case !slices.Contains(f.choices[:], b.choice):
		heading, message = choose, "Go back to "+f.list+" and choose what to do with what you ticked."
	case len(b.ids) == 0:
		heading, message = "No "+f.noun+" was ticked", "Tick the "+f.noun+"s in "+f.list+", then "+strings.ToLower(choose[:1])+choose[1:]+"."
	case len(b.ids) > maxPageBulk:
		heading, message = "Too many at once", "A page acts on at most 500 "+f.noun+"s at once; the API and tollgate "+f.cli+" bulk take up to 10,000."
	case len(b.text) > f.maxText:
		heading, message = "The "+f.text+" is too long", "It has at most "+strconv.Itoa(f.maxText)+" characters."
	default:
		return b, true
	}
	s.renderError(w, r, http.StatusUnprocessableEntity, heading, message, v)
	return pageBulk{}, false
}

// bulkFromInbox approves or rejects the requests ticked on the inbox, each
// as if decided on its own page, and shows what happened to each.
func (s *Server) bulkFromInbox(w http.ResponseWriter, r *http.Request) {
	v := s.viewerOf(r)
	form, ok := s.readPageBulk(w, r, v, pageBulkForm{choice: "decision", choices: [2]string{"approve", "reject"}, labels: [2]string{"Approve", "Reject"}, text: "comment", maxText: 10_000,
		noun: "request", list: "the inbox", cli: "suspensions"})
	if !ok {
		return
	}
	ids, comment := form.ids, form.text
	approve := form.choice == "approve"
	actor := viewerPrincipal(v).User
	titles := map[string]string{}
	act := func(id string) (string, error) {
		sp, err := s.Store.Suspension(r.Context(), id)
		if err == nil && (sp.Precompleted || !sp.MayRead(actor)) {
			err = domain.ErrNotFound
		}
		if err != nil {
			return "", err
		}
		titles[id] = views.TitleOf(sp)
		audit := s.auditEntry(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: decisionAction(approve),
			Data: auditData(map[string]any{"runId": sp.RunID, "comment": comment, "bulk": true})})
		out, err := s.Engine.Decide(r.Context(), domain.ResumeRequest{SuspensionID: sp.ID, By: v.Email, Actor: &actor, Audit: audit, Channel: domain.ChannelWeb}, approve, comment)
		return string(out.Status), err
	}
	verb := map[bool]string{true: "Approved", false: "Rejected"}[approve]
	p := views.BulkPage{Viewer: v, Verb: verb, Noun: "request", Back: "/inbox", BackLabel: "Back to the inbox"}
	sum := s.doBulk(r.Context(), slices.Values(ids), &listing{}, act, func(res bulkResult) {
		if !res.OK {
			p.Failures = append(p.Failures, views.BulkFailure{Label: cmp.Or(titles[res.ID], res.ID), Href: views.SuspensionURL(res.ID), Why: res.Detail})
		}
	})
	p.Done, p.Succeeded = sum.Done, sum.Succeeded
	s.render(w, r, http.StatusOK, views.Bulk(p))
}

// bulkFromRuns cancels or retries the runs ticked on the runs list (admins).
func (s *Server) bulkFromRuns(w http.ResponseWriter, r *http.Request) {
	v := s.viewerOf(r)
	form, ok := s.readPageBulk(w, r, v, pageBulkForm{choice: "action", choices: [2]string{"cancel", "retry"}, labels: [2]string{"Cancel", "Retry"}, text: "reason", maxText: 500,
		noun: "run", list: "the runs list", cli: "runs"})
	if !ok {
		return
	}
	ids, action, reason := form.ids, form.choice, form.text
	act := func(id string) (string, error) {
		audit := s.auditEntry(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "run." + action, Data: auditData(map[string]any{"bulk": true})})
		run, err := s.actOnRun(r.Context(), action, id, v.Email, reason, audit)
		return string(run.Status), err
	}
	verb := map[string]string{"cancel": "Cancelled", "retry": "Retried"}[action]
	p := views.BulkPage{Viewer: v, Verb: verb, Noun: "run", Back: "/runs", BackLabel: "Back to the runs"}
	sum := s.doBulk(r.Context(), slices.Values(ids), &listing{}, act, func(res bulkResult) {
		if !res.OK {
			p.Failures = append(p.Failures, views.BulkFailure{Label: res.ID, Href: "/runs/" + res.ID, Why: res.Detail})
		}
	})
	p.Done, p.Succeeded = sum.Done, sum.Succeeded
	s.render(w, r, http.StatusOK, views.Bulk(p))
}
