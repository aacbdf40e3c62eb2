package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// The Schedules pages are the admins': the list, one schedule with its
// next fire times and its last fires, and its pause, resume and run-now
// buttons (pause and resume asked about first).

func (s *Server) schedulesPage(w http.ResponseWriter, r *http.Request) {
	v := s.viewerOf(r)
	list, next, err := s.Schedules.Store().Schedules(r.Context(), domain.ScheduleFilter{Cursor: r.URL.Query().Get("cursor"), Limit: 50})
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	p := views.SchedulesPage{Viewer: v, Now: s.Clock.Now(), Schedules: list}
	if next != "" {
		p.Next = "/admin/schedules?cursor=" + url.QueryEscape(next)
	}
	s.render(w, r, http.StatusOK, views.Schedules(p))
}

// scheduleOf reads the schedule the path names, or answers the page
// itself: not found, or a failure.
func (s *Server) scheduleOf(w http.ResponseWriter, r *http.Request) (domain.Schedule, bool) {
	sc, err := s.Schedules.Store().Schedule(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, domain.ErrNotFound):
		s.scheduleNotFound(w, r)
		return sc, false
	case err != nil:
		s.uiFailure(w, r, err)
		return sc, false
	}
	return sc, true
}

func (s *Server) schedulePage(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.scheduleOf(w, r)
	if !ok {
		return
	}
	fires, err := s.Schedules.Store().ScheduleFires(r.Context(), sc.ID, scheduleFires)
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	p := views.SchedulePage{Viewer: s.viewerOf(r), Now: s.Clock.Now(), Schedule: sc, NextFires: comingFires(sc), Fires: fires, Input: indentJSON(sc.Input)}
	switch r.URL.Query().Get("done") {
	case "paused":
		p.Notice = "Paused. It fires nothing until it is resumed."
	case "resumed":
		p.Notice = "Resumed. It fires next at the time shown; the fires it passed over are not replayed."
	case "triggered":
		p.Notice = "A run started now. It is the newest of the last fires below."
	}
	s.render(w, r, http.StatusOK, views.ScheduleView(p))
}

// confirmSchedulePause asks before a pause or a resume (pause is true for
// a pause).
func (s *Server) confirmSchedulePause(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sc, ok := s.scheduleOf(w, r)
		if !ok {
			return
		}
		if sc.Paused == pause {
			http.Redirect(w, r, views.ScheduleURL(sc.ID), http.StatusSeeOther)
			return
		}
		p := views.ConfirmPage{Viewer: s.viewerOf(r), Back: views.ScheduleURL(sc.ID)}
		if pause {
			p.Question, p.Button, p.Action = "Pause schedule ‘"+sc.ID+"’?", "Pause the schedule", views.ScheduleURL(sc.ID)+"/pause"
			p.Consequence = "It starts no run of " + views.WorkflowName(sc.WorkflowID) + " until it is resumed. Runs it started go on. Resuming it later does not replay the fires it passes over."
		} else {
			p.Question, p.Button, p.Action = "Resume schedule ‘"+sc.ID+"’?", "Resume the schedule", views.ScheduleURL(sc.ID)+"/resume"
			p.Consequence = "It fires again from the next time its rule gives (" + sc.Words() + "). The fires it passed over while paused are not replayed."
		}
		s.render(w, r, http.StatusOK, views.Confirm(p))
	}
}

// pauseFromPage pauses or resumes a schedule.
func (s *Server) pauseFromPage(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := s.viewerOf(r)
		id := r.PathValue("id")
		action, done := "schedule.resume", "resumed"
		if pause {
			action, done = "schedule.pause", "paused"
		}
		audit := s.auditEntry(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: action, Data: auditData(map[string]any{"schedule": id})})
		_, err := s.Schedules.Update(r.Context(), id, func(spec *domain.ScheduleSpec) error { spec.Paused = pause; return nil }, audit)
		switch {
		case errors.Is(err, domain.ErrNotFound):
			s.scheduleNotFound(w, r)
		case err != nil:
			s.uiFailure(w, r, err)
		default:
			http.Redirect(w, r, views.ScheduleURL(id)+"?done="+done, http.StatusSeeOther)
		}
	}
}

func (s *Server) scheduleNotFound(w http.ResponseWriter, r *http.Request) {
	s.renderError(w, r, http.StatusNotFound, "Schedule not found", "There is no schedule with this id. It may have been deleted.", s.viewerOf(r))
}

// triggerFromPage starts a run of the schedule now.
func (s *Server) triggerFromPage(w http.ResponseWriter, r *http.Request) {
	v := s.viewerOf(r)
	id := r.PathValue("id")
	_, err := s.Schedules.Trigger(r.Context(), id, domain.User{ID: v.ID, Email: v.Email})
	var ve *domain.ValidationError
	switch {
	case errors.Is(err, domain.ErrNotFound):
		s.renderError(w, r, http.StatusNotFound, "Schedule not found", "There is no schedule with this id, or its workflow is no longer registered.", v)
	case errors.As(err, &ve):
		s.renderError(w, r, http.StatusUnprocessableEntity, "The run could not start", ve.Error(), v)
	case err != nil:
		s.uiFailure(w, r, err)
	default:
		http.Redirect(w, r, views.ScheduleURL(id)+"?done=triggered", http.StatusSeeOther)
	}
}
