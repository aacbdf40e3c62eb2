package ui

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
	"github.com/tollgatehq/tollgate/web"
)

// maxPageBulk is how many ticked items a bulk action from a page takes, as
// many as a page lists; "all that match" takes up to MaxBulk, as the API
// does, and the page shows its progress.
const maxPageBulk = 500

// pageBulkForm describes a bulk form on a page: the field its buttons
// send (one of choices), its text field and that field's limit, and how
// its items and list are called.
type pageBulkForm struct {
	choice  string
	choices [2]string
	labels  [2]string // the buttons' words
	text    string
	maxText int
	noun    string // "request"
	list    string // "the inbox"
}

// pageBulk is what a bulk form sent: the ticked ids, or all (every item
// its list's filter matches, up to maxPageBulk).
type pageBulk struct {
	ids          []string
	all          bool
	choice, text string
}

// readPageBulk reads a bulk form, answering a person's mistake (nothing
// ticked, no choice, too many, too long a text) with a page that says so.
func (s *pages) readPageBulk(w http.ResponseWriter, r *http.Request, v *views.Viewer, f pageBulkForm) (pageBulk, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, s.MaxBody)
	if err := r.ParseForm(); err != nil {
		s.RenderError(w, r, http.StatusBadRequest, "The form could not be read", "Go back to "+f.list+" and try again.", v)
		return pageBulk{}, false
	}
	b := pageBulk{ids: r.PostForm["id"], all: r.PostForm.Get("scope") == "all", choice: r.PostForm.Get(f.choice), text: strings.TrimSpace(r.PostForm.Get(f.text))}
	if b.all {
		b.ids = nil
	}
	choose := "Choose " + f.labels[0] + " or " + f.labels[1]
	var heading, message string
	switch {
	case !slices.Contains(f.choices[:], b.choice):
		heading, message = choose, "Go back to "+f.list+" and choose what to do with what you ticked."
	case len(b.ids) == 0 && !b.all:
		heading, message = "No "+f.noun+" was ticked", "Tick the "+f.noun+"s in "+f.list+", then "+strings.ToLower(choose[:1])+choose[1:]+"."
	case len(b.ids) > maxPageBulk:
		heading, message = "Too many ticked", "Tick at most 500 "+f.noun+"s, or choose all that match the filters (up to 10,000)."
	case len(b.text) > f.maxText:
		heading, message = "The "+f.text+" is too long", "It has at most "+strconv.Itoa(f.maxText)+" characters."
	default:
		return b, true
	}
	s.RenderError(w, r, http.StatusUnprocessableEntity, heading, message, v)
	return pageBulk{}, false
}

// bulkFromInbox approves or rejects the requests ticked on the inbox, each
// as if decided on its own page, and shows what happened to each.
func (s *pages) bulkFromInbox(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	form, ok := s.readPageBulk(w, r, v, pageBulkForm{choice: "decision", choices: [2]string{"approve", "reject"}, labels: [2]string{"Approve", "Reject"}, text: "comment", maxText: 10_000,
		noun: "request", list: "the inbox"})
	if !ok {
		return
	}
	comment := form.text
	approve := form.choice == "approve"
	items, list := slices.Values(form.ids), &web.Listing{}
	if form.all {
		f, _ := inboxFilterOf(r.PostForm)
		f.Kind = string(domain.KindApproval) // only approvals are decided in bulk
		items = web.Pages(r.Context(), list, s.pendingIn(f, "", s.BulkPage()), s.Store.Suspensions, func(sp domain.Suspension) string { return sp.ID },
			func(f *domain.SuspensionFilter, c string) { f.Cursor = c })
	}
	actor := web.ViewerPrincipal(v).User
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
		audit := s.AuditEntry(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: web.DecisionAction(approve),
			Data: web.AuditData(map[string]any{"runId": sp.RunID, "comment": comment, "bulk": true})})
		out, err := s.Engine.Decide(r.Context(), domain.ResumeRequest{SuspensionID: sp.ID, By: v.Email, Actor: &actor, Audit: audit, Channel: domain.ChannelWeb}, approve, comment)
		return string(out.Status), err
	}
	p := &views.BulkPage{Viewer: v, Verb: map[bool]string{true: "Approved", false: "Rejected"}[approve], Doing: map[bool]string{true: "Approving", false: "Rejecting"}[approve],
		Noun: "request", Back: "/inbox", BackLabel: "Back to the inbox"}
	s.runPageBulk(w, r, p, items, list, act, func(res web.BulkResult) views.BulkFailure {
		return views.BulkFailure{Label: cmp.Or(titles[res.ID], res.ID), Href: views.SuspensionURL(res.ID), Why: res.Detail}
	})
}

// bulkFromRuns cancels or retries the runs ticked on the runs list (admins).
func (s *pages) bulkFromRuns(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	form, ok := s.readPageBulk(w, r, v, pageBulkForm{choice: "action", choices: [2]string{"cancel", "retry"}, labels: [2]string{"Cancel", "Retry"}, text: "reason", maxText: 500,
		noun: "run", list: "the runs list"})
	if !ok {
		return
	}
	action, reason := form.choice, form.text
	items, list := slices.Values(form.ids), &web.Listing{}
	if form.all {
		f := domain.RunFilter{WorkflowID: strings.TrimSpace(r.PostForm.Get("workflow")), Limit: s.BulkPage()}
		if st, ok := domain.ParseRunStatus(r.PostForm.Get("status")); ok {
			f.Statuses = []domain.RunStatus{st}
		}
		items = web.Pages(r.Context(), list, f, s.Store.Runs, func(run domain.Run) string { return run.ID },
			func(f *domain.RunFilter, c string) { f.Cursor = c })
	}
	before := map[string]domain.Run{} // each run as it stood, to name it and say why it could not be acted on
	act := func(id string) (string, error) {
		if run, err := s.Store.Run(r.Context(), id); err == nil {
			before[id] = run
		}
		audit := s.AuditEntry(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "run." + action, Data: web.AuditData(map[string]any{"bulk": true})})
		run, err := s.ActOnRun(r.Context(), action, id, v.Email, reason, audit)
		return string(run.Status), err
	}
	p := &views.BulkPage{Viewer: v, Verb: map[string]string{"cancel": "Cancelled", "retry": "Retried"}[action], Doing: map[string]string{"cancel": "Cancelling", "retry": "Retrying"}[action],
		Noun: "run", Back: "/runs", BackLabel: "Back to the runs"}
	s.runPageBulk(w, r, p, items, list, act, func(res web.BulkResult) views.BulkFailure {
		run, found := before[res.ID]
		label := res.ID
		if found {
			label = views.RunLabel(run)
		}
		return views.BulkFailure{Label: label, Href: "/runs/" + res.ID, Why: whyNotActed(res, run)}
	})
}

// runPageBulk runs a bulk action from a page and streams the page as it
// goes: its head at once, a line of progress every BulkProgressEvery
// items, then the outcome, with each item failed says how. The write
// deadline moves with the progress, so no action is cut short for being
// long.
func (s *pages) runPageBulk(w http.ResponseWriter, r *http.Request, p *views.BulkPage, items func(func(string) bool), list *web.Listing,
	act func(id string) (string, error), failed func(web.BulkResult) views.BulkFailure) {
	rc := http.NewResponseController(w)
	work := templ.ComponentFunc(func(ctx context.Context, out io.Writer) error {
		flush := func() {
			if b, ok := out.(interface{ Flush() error }); ok { // templ's buffer, into w
				_ = b.Flush()
			}
			_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
			_ = rc.Flush()
		}
		flush()
		done := 0
		sum := s.DoBulk(r.Context(), items, list, act, func(res web.BulkResult) {
			if !res.OK {
				p.Failures = append(p.Failures, failed(res))
			}
			if done++; done%s.BulkProgressEvery() == 0 {
				_ = views.BulkProgress(*p, done).Render(ctx, out)
				flush()
			}
		})
		p.Done, p.Succeeded, p.More, p.Error = sum.Done, sum.Succeeded, sum.Truncated, sum.Error
		return views.BulkOutcome(*p).Render(ctx, out)
	})
	s.Render(w, r, http.StatusOK, views.BulkRunning(*p, work))
}

// whyNotActed says in a person's words why a run could not be cancelled
// or retried, from the problem's code; a problem without one keeps its
// detail.
func whyNotActed(res web.BulkResult, run domain.Run) string {
	switch res.Code {
	case domain.CodeNotFound:
		return "it no longer exists"
	case domain.CodeRunFinished:
		return "it has already finished"
	case domain.CodeRunNotFailed:
		return "it has not failed: it is " + string(run.Status)
	case domain.CodeNotRetryable:
		return "it was rejected, or it failed before failed steps were kept for retries; run it again as a new run instead"
	}
	return res.Detail
}
