package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// Schedules are the admins' (every route answers others 403): a schedule
// starts runs in the system's name, which no role's right to start a
// workflow bounds.

// scheduleFires is how many fire records GET /api/v1/schedules/{id} shows,
// and nextFires how many fire times to come.
const (
	scheduleFires = 20
	nextFires     = 5
)

type scheduleJSON struct {
	ID         string          `json:"id"`
	WorkflowID string          `json:"workflowId"`
	Cron       string          `json:"cron,omitempty"`
	EveryMs    int64           `json:"everyMs,omitempty"`
	Timezone   string          `json:"timezone"`
	Input      json.RawMessage `json:"input,omitempty"`
	Overlap    domain.Overlap  `json:"overlap"`
	CatchUpMs  int64           `json:"catchUpWindowMs"`
	Paused     bool            `json:"paused"`
	Note       string          `json:"note,omitempty"`
	// Description is the rule in words: "Every weekday at 09:00
	// Europe/Lisbon".
	Description string `json:"description"`
	// Source is "api", or "workflow" for a schedule its workflow's
	// document carries (which registering a new version replaces).
	Source     string     `json:"source"`
	NextFireAt *time.Time `json:"nextFireAt,omitempty"`
	LastFire   *fireJSON  `json:"lastFire,omitempty"`
	CreatedBy  string     `json:"createdBy,omitempty"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
	// NextFires and Fires are in one schedule's answer only: its next
	// fire times, and its newest fire records, newest first.
	NextFires []time.Time `json:"nextFires,omitempty"`
	Fires     *[]fireJSON `json:"fires,omitempty"`
}

type fireJSON struct {
	At      time.Time          `json:"at"`
	Outcome domain.FireOutcome `json:"outcome"`
	RunID   string             `json:"runId,omitempty"`
	// Count and Until: a span of missed fires, from at to until.
	Count      int        `json:"count,omitempty"`
	Until      *time.Time `json:"until,omitempty"`
	Manual     bool       `json:"manual,omitempty"`
	By         string     `json:"by,omitempty"`
	Message    string     `json:"message,omitempty"`
	RecordedAt *time.Time `json:"recordedAt,omitempty"`
}

func scheduleView(s domain.Schedule) scheduleJSON {
	v := scheduleJSON{ID: s.ID, WorkflowID: s.WorkflowID, Cron: s.Cron, EveryMs: s.Every.Milliseconds(), Timezone: s.Timezone, Input: s.Input,
		Overlap: s.Overlap, CatchUpMs: s.CatchUpWindow.Milliseconds(), Paused: s.Paused, Note: s.Note, Description: s.Words(),
		Source: s.Source, NextFireAt: timeOrNil(s.NextFireAt), CreatedBy: s.CreatedBy, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
	if !s.LastFireAt.IsZero() {
		v.LastFire = &fireJSON{At: s.LastFireAt, Outcome: s.LastOutcome, RunID: s.LastRunID}
	}
	return v
}

func fireView(f domain.ScheduleFire) fireJSON {
	v := fireJSON{At: f.At, Outcome: f.Outcome, RunID: f.RunID, Manual: f.Manual, By: f.By, Message: f.Message, RecordedAt: timeOrNil(f.RecordedAt)}
	if f.Outcome == domain.FireMissed {
		v.Count, v.Until = f.Count, timeOrNil(f.Until)
	}
	return v
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// scheduleBody is what POST takes and PATCH changes: a field PATCH leaves
// out stays as it is; cron and everyMs replace each other.
type scheduleBody struct {
	ID         *string         `json:"id"`
	WorkflowID *string         `json:"workflowId"`
	Cron       *string         `json:"cron"`
	EveryMs    *int64          `json:"everyMs"`
	Timezone   *string         `json:"timezone"`
	Input      json.RawMessage `json:"input"`
	Overlap    *domain.Overlap `json:"overlap"`
	CatchUpMs  *int64          `json:"catchUpWindowMs"`
	Paused     *bool           `json:"paused"`
	Note       *string         `json:"note"`
}

// apply sets the fields b carries on spec.
func (b scheduleBody) apply(spec *domain.ScheduleSpec) {
	set(&spec.WorkflowID, b.WorkflowID)
	if b.Cron != nil {
		spec.Cron, spec.Every = *b.Cron, 0
	}
	if b.EveryMs != nil {
		spec.Every = time.Duration(*b.EveryMs) * time.Millisecond
		if b.Cron == nil {
			spec.Cron = ""
		}
	}
	set(&spec.Timezone, b.Timezone)
	if b.Input != nil {
		spec.Input = b.Input
	}
	set(&spec.Overlap, b.Overlap)
	if b.CatchUpMs != nil {
		spec.CatchUpWindow = time.Duration(*b.CatchUpMs) * time.Millisecond
	}
	set(&spec.Paused, b.Paused)
	set(&spec.Note, b.Note)
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func (s *api) createSchedule(w http.ResponseWriter, r *http.Request) error {
	var body scheduleBody
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	var spec domain.ScheduleSpec
	set(&spec.ID, body.ID)
	body.apply(&spec)
	p := web.PrincipalFrom(r.Context())
	sc, err := s.Schedules.Create(r.Context(), spec, p.User.Email, s.apiAudit(r, "schedule.create", map[string]any{"schedule": spec.ID}))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/schedules/"+url.PathEscape(sc.ID))
	web.WriteJSON(w, http.StatusCreated, scheduleView(sc))
	return nil
}

func (s *api) listSchedules(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	cursor, limit, errs := web.PageQuery(q, nil)
	if err := web.InvalidQuery(errs); err != nil {
		return err
	}
	list, next, err := s.Schedules.Store().Schedules(r.Context(), domain.ScheduleFilter{WorkflowID: q.Get("workflowId"), Cursor: cursor, Limit: limit})
	if err != nil {
		return err
	}
	web.WritePage(w, list, scheduleView, next)
	return nil
}

// scheduleDetail is a schedule with its next fire times and newest fire
// records.
func (s *api) scheduleDetail(r *http.Request, sc domain.Schedule) (scheduleJSON, error) {
	v := scheduleView(sc)
	fires, err := s.Schedules.Store().ScheduleFires(r.Context(), sc.ID, scheduleFires)
	if err != nil {
		return v, err
	}
	list := make([]fireJSON, len(fires))
	for i, f := range fires {
		list[i] = fireView(f)
	}
	v.Fires = &list
	v.NextFires = sc.ComingFires(nextFires)
	return v, nil
}

func (s *api) showSchedule(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.Schedules.Store().Schedule(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	v, err := s.scheduleDetail(r, sc)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, v)
	return nil
}

// patchSchedule changes, pauses or resumes a schedule. A resumed schedule
// fires next at its rule's first time after now: what it passed over
// while paused is not replayed.
func (s *api) patchSchedule(w http.ResponseWriter, r *http.Request) error {
	var body scheduleBody
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	if body.ID != nil && *body.ID != r.PathValue("id") {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "A schedule's id cannot change",
			Fields: []domain.FieldError{{Field: "/id", Message: "must be the schedule's own id, or left out"}}}
	}
	action := "schedule.update"
	if body.Paused != nil {
		action = map[bool]string{true: "schedule.pause", false: "schedule.resume"}[*body.Paused]
	}
	sc, err := s.Schedules.Update(r.Context(), r.PathValue("id"), func(spec *domain.ScheduleSpec) error { body.apply(spec); return nil },
		s.apiAudit(r, action, map[string]any{"schedule": r.PathValue("id")}))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, scheduleView(sc))
	return nil
}

func (s *api) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.Schedules.Delete(r.Context(), id, s.apiAudit(r, "schedule.delete", map[string]any{"schedule": id})); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// triggerSchedule starts a run of the schedule now, as a fire would,
// whatever its overlap policy and even while it is paused.
func (s *api) triggerSchedule(w http.ResponseWriter, r *http.Request) error {
	run, err := s.Schedules.Trigger(r.Context(), r.PathValue("id"), web.PrincipalFrom(r.Context()).User)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/runs/"+url.PathEscape(run.ID))
	web.WriteJSON(w, http.StatusCreated, web.RunView(run))
	return nil
}
