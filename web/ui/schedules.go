package ui

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
	"github.com/tollgatehq/tollgate/web"
)

// The Schedules pages are the admins': the list, one schedule with its
// next fire times and its last fires, and its pause, resume and run-now
// buttons (pause and resume asked about first).

func (s *pages) schedulesPage(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	list, next, err := s.Schedules.Store().Schedules(r.Context(), domain.ScheduleFilter{Cursor: r.URL.Query().Get("cursor"), Limit: 50})
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	p := views.SchedulesPage{Viewer: v, Now: s.Clock.Now(), Schedules: list}
	if next != "" {
		p.Next = "/admin/schedules?cursor=" + url.QueryEscape(next)
	}
	s.Render(w, r, http.StatusOK, views.Schedules(p))
}

// scheduleOf reads the schedule the path names, or answers the page
// itself: not found, or a failure.
func (s *pages) scheduleOf(w http.ResponseWriter, r *http.Request) (domain.Schedule, bool) {
	sc, err := s.Schedules.Store().Schedule(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, domain.ErrNotFound):
		s.scheduleNotFound(w, r)
		return sc, false
	case err != nil:
		s.UIFailure(w, r, err)
		return sc, false
	}
	return sc, true
}

func (s *pages) schedulePage(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.scheduleOf(w, r)
	if !ok {
		return
	}
	fires, err := s.Schedules.Store().ScheduleFires(r.Context(), sc.ID, pageFires)
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	p := views.SchedulePage{Viewer: s.ViewerOf(r), Now: s.Clock.Now(), Schedule: sc, NextFires: sc.ComingFires(pageNextFires), Fires: fires, Input: indentJSON(sc.Input)}
	switch r.URL.Query().Get("done") {
	case "paused":
		p.Notice = "Paused. It fires nothing until it is resumed."
	case "resumed":
		p.Notice = "Resumed. It fires next at the time shown; the fires it passed over are not replayed."
	case "triggered":
		p.Notice = "A run started now. It is the newest of the last fires below."
	}
	s.Render(w, r, http.StatusOK, views.ScheduleView(p))
}

// confirmSchedulePause asks before a pause or a resume (pause is true for
// a pause).
func (s *pages) confirmSchedulePause(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sc, ok := s.scheduleOf(w, r)
		if !ok {
			return
		}
		if sc.Paused == pause {
			http.Redirect(w, r, views.ScheduleURL(sc.ID), http.StatusSeeOther)
			return
		}
		p := views.ConfirmPage{Viewer: s.ViewerOf(r), Back: views.ScheduleURL(sc.ID)}
		if pause {
			p.Question, p.Button, p.Action = "Pause schedule ‘"+sc.ID+"’?", "Pause the schedule", views.ScheduleURL(sc.ID)+"/pause"
			p.Consequence = "It starts no run of " + views.WorkflowName(sc.WorkflowID) + " until it is resumed. Runs it started go on. Resuming it later does not replay the fires it passes over."
		} else {
			p.Question, p.Button, p.Action = "Resume schedule ‘"+sc.ID+"’?", "Resume the schedule", views.ScheduleURL(sc.ID)+"/resume"
			p.Consequence = "It fires again from the next time its rule gives (" + sc.Words() + "). The fires it passed over while paused are not replayed."
		}
		s.Render(w, r, http.StatusOK, views.Confirm(p))
	}
}

// pauseFromPage pauses or resumes a schedule.
func (s *pages) pauseFromPage(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := s.ViewerOf(r)
		id := r.PathValue("id")
		action, done := "schedule.resume", "resumed"
		if pause {
			action, done = "schedule.pause", "paused"
		}
		audit := s.AuditEntry(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: action, Data: web.AuditData(map[string]any{"schedule": id})})
		_, err := s.Schedules.Update(r.Context(), id, func(spec *domain.ScheduleSpec) error { spec.Paused = pause; return nil }, audit)
		switch {
		case errors.Is(err, domain.ErrNotFound):
			s.scheduleNotFound(w, r)
		case err != nil:
			s.UIFailure(w, r, err)
		default:
			http.Redirect(w, r, views.ScheduleURL(id)+"?done="+done, http.StatusSeeOther)
		}
	}
}

func (s *pages) scheduleNotFound(w http.ResponseWriter, r *http.Request) {
	s.RenderError(w, r, http.StatusNotFound, "Schedule not found", "There is no schedule with this id. It may have been deleted.", s.ViewerOf(r))
}

// triggerFromPage starts a run of the schedule now.
func (s *pages) triggerFromPage(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	id := r.PathValue("id")
	_, err := s.Schedules.Trigger(r.Context(), id, domain.User{ID: v.ID, Email: v.Email})
	var ve *domain.ValidationError
	switch {
	case errors.Is(err, domain.ErrNotFound):
		s.RenderError(w, r, http.StatusNotFound, "Schedule not found", "There is no schedule with this id, or its workflow is no longer registered.", v)
	case errors.As(err, &ve):
		s.RenderError(w, r, http.StatusUnprocessableEntity, "The run could not start", ve.Error(), v)
	case err != nil:
		s.UIFailure(w, r, err)
	default:
		http.Redirect(w, r, views.ScheduleURL(id)+"?done=triggered", http.StatusSeeOther)
	}
}

// pageFires is how many fire records a schedule's page shows, and
// pageNextFires how many fire times to come.
const (
	pageFires     = 20
	pageNextFires = 5
)
