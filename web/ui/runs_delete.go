package ui

import (
	"errors"
	"net/http"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// deletedRunNotice is what the runs list says after a deletion. The link
// carries only a fixed word, so nobody can make the page say something
// else through it.
const deletedRunNotice = "The run is deleted, with its history, its requests and their documents. The audit log keeps who deleted it and why."

// confirmDeleteRun asks before deleteFromPage, and asks why: the reason
// is kept in the audit log, as it is for the API's deletion.
func (s *pages) confirmDeleteRun(w http.ResponseWriter, r *http.Request) {
	s.showDeleteRun(w, r, s.ViewerOf(r), r.PathValue("id"), "", "")
}

// deleteFromPage deletes a run (admins) through the same engine call and
// audit entry as the API, then shows the runs list. A refused reason
// shows the question again with what was typed, and deletes nothing.
func (s *pages) deleteFromPage(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	id, reason := r.PathValue("id"), r.PostFormValue("reason")
	err := s.Engine.DeleteRun(r.Context(), domain.DeleteRunRequest{RunID: id, Reason: reason,
		Audit: s.AuditEntry(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "run.delete"})})
	ve, refused := errors.AsType[*domain.ValidationError](err)
	switch {
	case refused:
		s.showDeleteRun(w, r, v, id, reason, reasonProblem(reason, ve))
	case errors.Is(err, domain.ErrNotFound):
		s.runGone(w, r, v)
	case err != nil:
		s.UIFailure(w, r, err)
	default:
		http.Redirect(w, r, "/runs?done=deleted", http.StatusSeeOther)
	}
}

// showDeleteRun shows the question before deleting run id. With a
// problem, it is a refusal: the reason typed comes back marked with what
// was wrong with it.
func (s *pages) showDeleteRun(w http.ResponseWriter, r *http.Request, v *views.Viewer, id, reason, problem string) {
	run, err := s.Store.Run(r.Context(), id)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		s.runGone(w, r, v)
	case err != nil:
		s.UIFailure(w, r, err)
	case problem != "":
		s.Render(w, r, http.StatusUnprocessableEntity, views.Confirm(deleteRunPage(v, run, reason, problem)))
	default:
		s.Render(w, r, http.StatusOK, views.Confirm(deleteRunPage(v, run, reason, "")))
	}
}

// runGone says that there is no run to delete.
func (s *pages) runGone(w http.ResponseWriter, r *http.Request, v *views.Viewer) {
	s.RenderError(w, r, http.StatusNotFound, "Run not found", "There is no run with this id; it may have been deleted already.", v)
}

// reasonProblem says in plain words what was wrong with a reason: a
// blank one is asked for again, anything else is named by its field error.
func reasonProblem(reason string, ve *domain.ValidationError) string {
	if strings.TrimSpace(reason) != "" {
		for _, f := range ve.Fields {
			if f.Field == "/reason" {
				return "The reason " + f.Message + "."
			}
		}
	}
	return "Say why the run is deleted; the audit log keeps it."
}

// deleteRunPage is the question before deleting run.
func deleteRunPage(v *views.Viewer, run domain.Run, reason, problem string) views.ConfirmPage {
	consequence := "The run is removed for good, with its history, its requests and the documents uploaded to them. It cannot be restored."
	if !run.Status.Terminal() {
		consequence = "It has not finished: it stops at once, and nobody can resume it. " + consequence
	}
	return views.ConfirmPage{Viewer: v,
		Question:    "Delete this run of " + run.WorkflowID + "?",
		Consequence: consequence,
		ReasonLabel: "Why is it deleted?", ReasonHint: "Kept in the audit log with your name; up to 500 characters.",
		Reason: reason, ReasonError: problem,
		Action: "/runs/" + run.ID + "/delete", Button: "Delete the run", Back: "/runs/" + run.ID, BackLabel: "No, keep it"}
}
