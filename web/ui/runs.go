package ui

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// cancelFromPage cancels a run that has not finished (admins), through the
// same kernel path as the API, and shows the run again.
func (s *pages) cancelFromPage(w http.ResponseWriter, r *http.Request) {
	reason := r.PostFormValue("reason")
	s.runFromPage(w, r, "run.cancel", func(id string, v *views.Viewer, audit *domain.AuditEntry) (domain.Run, error) {
		return s.Engine.Cancel(r.Context(), domain.CancelRequest{RunID: id, By: v.Email, Reason: reason, Audit: audit})
	}, func(v *views.Viewer, err error) bool {
		var ve *domain.ValidationError
		switch {
		case errors.As(err, &ve):
			run, err := s.Store.Run(r.Context(), r.PathValue("id"))
			if err != nil {
				s.UIFailure(w, r, err)
				return true
			}
			s.Render(w, r, http.StatusUnprocessableEntity, views.Confirm(cancelRunPage(v, run, reason, reasonProblem(reason, ve))))
		case errors.As(err, new(*domain.ConflictError)):
			s.RenderError(w, r, http.StatusConflict, "The run has already finished", "A finished run cannot be cancelled.", v)
		default:
			return false
		}
		return true
	})
}

// retryFromPage retries a failed run from its page and shows it again,
// running; a run that is no longer failed (retried meanwhile, say) is
// answered with a page that says so.
func (s *pages) retryFromPage(w http.ResponseWriter, r *http.Request) {
	s.runFromPage(w, r, "run.retry", func(id string, v *views.Viewer, audit *domain.AuditEntry) (domain.Run, error) {
		return s.Engine.Retry(r.Context(), domain.RetryRequest{RunID: id, By: v.Email, Audit: audit})
	}, func(v *views.Viewer, err error) bool {
		var ce *domain.ConflictError
		switch {
		case errors.As(err, &ce) && ce.Code == domain.CodeNotRetryable:
			s.RenderError(w, r, http.StatusConflict, "This run cannot be retried", "It was rejected, or it failed before failed steps were kept for retries. Run it again as a new run instead.", v)
		case errors.As(err, &ce):
			s.RenderError(w, r, http.StatusConflict, "The run is no longer failed", "Someone retried it already, or it was deleted and started again. Open the run to see where it stands.", v)
		default:
			return false
		}
		return true
	})
}

// runFromPage does act to the run the path names, in the viewer's name
// and with an audit entry of action, and shows the run again. An error
// that refuse answers (it says whether it did) gets its page; a run that
// does not exist is 404.
func (s *pages) runFromPage(w http.ResponseWriter, r *http.Request, action string,
	act func(id string, v *views.Viewer, audit *domain.AuditEntry) (domain.Run, error), refuse func(v *views.Viewer, err error) bool) {
	v := s.ViewerOf(r)
	run, err := act(r.PathValue("id"), v, s.AuditEntry(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: action}))
	switch {
	case err == nil:
		http.Redirect(w, r, "/runs/"+run.ID, http.StatusSeeOther)
	case errors.Is(err, domain.ErrNotFound):
		s.RenderError(w, r, http.StatusNotFound, "Run not found", "There is no run with this id.", v)
	case !refuse(v, err):
		s.UIFailure(w, r, err)
	}
}

// rerunFromPage starts a new run with a run's input and opens it.
func (s *pages) rerunFromPage(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	old, err := s.Store.Run(r.Context(), r.PathValue("id"))
	if errors.Is(err, domain.ErrNotFound) {
		s.RenderError(w, r, http.StatusNotFound, "Run not found", "There is no run with this id.", v)
		return
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	run, _, err := s.Engine.Rerun(r.Context(), domain.Starter{ID: v.ID, Email: v.Email, Role: v.Role}, old, nil, "")
	switch {
	case errors.Is(err, domain.ErrStartForbidden):
		s.RenderError(w, r, http.StatusForbidden, "You may not start this workflow", "Its runs are started by other people; ask an admin.", v)
		return
	case err != nil:
		var ve *domain.ValidationError
		if errors.As(err, &ve) {
			s.RenderError(w, r, http.StatusUnprocessableEntity, "The run cannot start again", "Its input does not fit the workflow as it is now: "+ve.Message, v)
			return
		}
		s.UIFailure(w, r, err)
		return
	}
	http.Redirect(w, r, "/runs/"+run.ID, http.StatusSeeOther)
}

// runPage shows a run to reviewers and admins: why it failed or what it
// waits for, its events told in people's words, and the raw record (input,
// output, suspensions, event payloads) under technical details.
func (s *pages) runPage(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	run, sps, err := s.Store.RunWithSuspensions(r.Context(), r.PathValue("id"))
	if errors.Is(err, domain.ErrNotFound) {
		s.RenderError(w, r, http.StatusNotFound, "Run not found", "There is no run with this id.", v)
		return
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	events, err := s.Store.Events(r.Context(), run.ID)
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	p := views.RunPage{Viewer: v, Run: run, Input: indentJSON(run.Input), Suspensions: sps, Story: views.Story(run, events, sps, s.namesIn(r, events, sps)), Now: s.Clock.Now()}
	if len(run.Output) > 0 && string(run.Output) != "null" {
		p.Output = indentJSON(run.Output)
	}
	for _, e := range events {
		p.Events = append(p.Events, views.EventView{Seq: e.Seq, Type: e.Type, Step: e.Step, Payload: indentJSON(e.Payload), At: e.CreatedAt})
	}
	s.Render(w, r, http.StatusOK, views.RunView(p))
}

// oneStatus is the filter for one status, or for all when s is empty.
func oneStatus(s domain.RunStatus) []domain.RunStatus {
	if s == "" {
		return nil
	}
	return []domain.RunStatus{s}
}

// runsPage lists runs, newest first, by status and workflow. The status
// is read as the API reads it (domain.ParseRunStatus): the seeds' names
// show the status they mean, and a name that is no status is answered
// with the page, saying so, rather than with an empty list.
func (s *pages) runsPage(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	q := r.URL.Query()
	workflow := strings.TrimSpace(q.Get("workflow"))
	var status domain.RunStatus
	if name := q.Get("status"); name != "" {
		var ok bool
		if status, ok = domain.ParseRunStatus(name); !ok {
			s.Render(w, r, http.StatusBadRequest, views.Runs(views.RunsPage{Viewer: v, Workflow: workflow, Now: s.Clock.Now(),
				Failure: strconv.Quote(name) + " is not a run status: " + domain.RunStatusNames + "."}))
			return
		}
	}
	runs, next, err := s.Store.Runs(r.Context(), domain.RunFilter{Statuses: oneStatus(status), WorkflowID: workflow, Cursor: q.Get("cursor"), Limit: 50})
	var ve *domain.ValidationError
	if errors.As(err, &ve) {
		s.RenderError(w, r, http.StatusBadRequest, "That page link is not valid", "The link to this page of runs is damaged or out of date. Start again from the first page.", v)
		return
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	p := views.RunsPage{Viewer: v, Status: string(status), Workflow: workflow, Runs: runs, Now: s.Clock.Now()}
	if q.Get("done") == "deleted" {
		p.Notice = deletedRunNotice
	}
	if next != "" {
		p.Next = views.RunsURL(p.Status, workflow, next)
	}
	s.Render(w, r, http.StatusOK, views.Runs(p))
}
