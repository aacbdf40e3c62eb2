package web

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// maxPageBulk is how many items a bulk action from a page takes: the
// people who need more use the API or the CLI, which stream their
// progress.
const maxPageBulk = 500

// bulkFromInbox approves or rejects the requests ticked on the inbox, each
// as if decided on its own page, and shows what happened to each.
func (s *Server) bulkFromInbox(w http.ResponseWriter, r *http.Request) {
	v := s.viewerOf(r)
	r.Body = http.MaxBytesReader(w, r.Body, s.MaxBody)
	if err := r.ParseForm(); err != nil {
		s.renderError(w, r, http.StatusBadRequest, "The form could not be read", "Go back to the inbox and try again.", v)
		return
	}
	ids := r.PostForm["id"]
	decision := r.PostForm.Get("decision")
	comment := strings.TrimSpace(r.PostForm.Get("comment"))
	switch {
	case decision != "approve" && decision != "reject":
		s.renderError(w, r, http.StatusUnprocessableEntity, "Choose Approve or Reject", "Go back to the inbox and choose what to do with the requests you ticked.", v)
		return
	case len(ids) == 0:
		s.renderError(w, r, http.StatusUnprocessableEntity, "No request was ticked", "Tick the requests to decide in the inbox, then choose Approve or Reject.", v)
		return
	case len(ids) > maxPageBulk:
		s.renderError(w, r, http.StatusUnprocessableEntity, "Too many at once", "A page decides at most 500 requests at once; the API and tollgate suspensions bulk take up to 10,000.", v)
		return
	case len(comment) > 10_000:
		s.renderError(w, r, http.StatusUnprocessableEntity, "The comment is too long", "A comment has at most 10,000 characters.", v)
		return
	}
	approve := decision == "approve"
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
	r.Body = http.MaxBytesReader(w, r.Body, s.MaxBody)
	if err := r.ParseForm(); err != nil {
		s.renderError(w, r, http.StatusBadRequest, "The form could not be read", "Go back to the runs and try again.", v)
		return
	}
	ids := r.PostForm["id"]
	action := r.PostForm.Get("action")
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	switch {
	case action != "cancel" && action != "retry":
		s.renderError(w, r, http.StatusUnprocessableEntity, "Choose Cancel or Retry", "Go back to the runs and choose what to do with the runs you ticked.", v)
		return
	case len(ids) == 0:
		s.renderError(w, r, http.StatusUnprocessableEntity, "No run was ticked", "Tick the runs in the list, then choose Cancel or Retry.", v)
		return
	case len(ids) > maxPageBulk:
		s.renderError(w, r, http.StatusUnprocessableEntity, "Too many at once", "A page acts on at most 500 runs at once; the API and tollgate runs bulk take up to 10,000.", v)
		return
	}
	act := func(id string) (string, error) {
		audit := s.auditEntry(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "run." + action, Data: auditData(map[string]any{"bulk": true})})
		var run domain.Run
		var err error
		if action == "cancel" {
			run, err = s.Engine.Cancel(r.Context(), domain.CancelRequest{RunID: id, By: v.Email, Reason: reason, Audit: audit})
		} else {
			run, err = s.Engine.Retry(r.Context(), domain.RetryRequest{RunID: id, By: v.Email, Reason: reason, Audit: audit})
		}
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
