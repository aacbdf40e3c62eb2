package client

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// Schedule is a schedule that starts runs of a workflow by the calendar
// (admins' keys only): at the times of a cron rule or every EveryMs, in
// Timezone.
type Schedule struct {
	ID         string          `json:"id"`
	WorkflowID string          `json:"workflowId"`
	Cron       string          `json:"cron,omitempty"`
	EveryMs    int64           `json:"everyMs,omitempty"`
	Timezone   string          `json:"timezone"`
	Input      json.RawMessage `json:"input,omitempty"`
	// Overlap is skip, buffer_one or allow.
	Overlap         string `json:"overlap"`
	CatchUpWindowMs int64  `json:"catchUpWindowMs"`
	Paused          bool   `json:"paused"`
	Note            string `json:"note,omitempty"`
	// Description is the rule in words: "Every weekday at 09:00
	// Europe/Lisbon".
	Description string `json:"description"`
	// Source is api, or workflow for a schedule its workflow's document
	// carries.
	Source     string        `json:"source"`
	NextFireAt *time.Time    `json:"nextFireAt,omitempty"`
	LastFire   *ScheduleFire `json:"lastFire,omitempty"`
	CreatedBy  string        `json:"createdBy,omitempty"`
	CreatedAt  time.Time     `json:"createdAt"`
	UpdatedAt  time.Time     `json:"updatedAt"`
	// NextFires and Fires come with GetSchedule: the next 5 fire times,
	// and the last 20 fires, newest first.
	NextFires []time.Time    `json:"nextFires,omitempty"`
	Fires     []ScheduleFire `json:"fires,omitempty"`
}

// ScheduleFire is what became of one fire time: started (RunID), skipped,
// buffered, missed (Count fires from At to Until) or failed (Message).
type ScheduleFire struct {
	At         time.Time  `json:"at"`
	Outcome    string     `json:"outcome"`
	RunID      string     `json:"runId,omitempty"`
	Count      int        `json:"count,omitempty"`
	Until      *time.Time `json:"until,omitempty"`
	Manual     bool       `json:"manual,omitempty"`
	By         string     `json:"by,omitempty"`
	Message    string     `json:"message,omitempty"`
	RecordedAt *time.Time `json:"recordedAt,omitempty"`
}

// ScheduleSpec is a schedule to create, or the changes to make to one:
// fields left nil are left as they are (or take their defaults: UTC, skip,
// a one-minute catch-up window). Cron and EveryMs replace each other.
type ScheduleSpec struct {
	ID              *string         `json:"id,omitempty"`
	WorkflowID      *string         `json:"workflowId,omitempty"`
	Cron            *string         `json:"cron,omitempty"`
	EveryMs         *int64          `json:"everyMs,omitempty"`
	Timezone        *string         `json:"timezone,omitempty"`
	Input           json.RawMessage `json:"input,omitempty"`
	Overlap         *string         `json:"overlap,omitempty"`
	CatchUpWindowMs *int64          `json:"catchUpWindowMs,omitempty"`
	Paused          *bool           `json:"paused,omitempty"`
	Note            *string         `json:"note,omitempty"`
}

// Ptr is a pointer to v, for ScheduleSpec's fields.
func Ptr[T any](v T) *T { return &v }

// CreateSchedule creates a schedule.
func (c *Client) CreateSchedule(ctx context.Context, s ScheduleSpec) (Schedule, error) {
	var out Schedule
	_, err := c.do(ctx, "POST", "/api/v1/schedules", nil, s, &out)
	return out, err
}

// ListSchedules lists one page of schedules, by id; of one workflow when
// workflowID is set.
func (c *Client) ListSchedules(ctx context.Context, workflowID, cursor string, limit int) (Page[Schedule], error) {
	q := url.Values{}
	set(q, "workflowId", workflowID)
	paging(q, cursor, limit)
	var p Page[Schedule]
	_, err := c.do(ctx, "GET", "/api/v1/schedules", q, nil, &p)
	return p, err
}

// GetSchedule returns one schedule with its next fire times and last
// fires.
func (c *Client) GetSchedule(ctx context.Context, id string) (Schedule, error) {
	var out Schedule
	_, err := c.do(ctx, "GET", "/api/v1/schedules/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// UpdateSchedule changes the fields of change that are set.
func (c *Client) UpdateSchedule(ctx context.Context, id string, change ScheduleSpec) (Schedule, error) {
	var out Schedule
	_, err := c.do(ctx, "PATCH", "/api/v1/schedules/"+url.PathEscape(id), nil, change, &out)
	return out, err
}

// PauseSchedule stops a schedule from firing.
func (c *Client) PauseSchedule(ctx context.Context, id string) (Schedule, error) {
	return c.UpdateSchedule(ctx, id, ScheduleSpec{Paused: Ptr(true)})
}

// ResumeSchedule lets a paused schedule fire again, from its rule's next
// time: the fires it passed over are not replayed.
func (c *Client) ResumeSchedule(ctx context.Context, id string) (Schedule, error) {
	return c.UpdateSchedule(ctx, id, ScheduleSpec{Paused: Ptr(false)})
}

// DeleteSchedule deletes a schedule and its fire records; its runs stay.
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	_, err := c.do(ctx, "DELETE", "/api/v1/schedules/"+url.PathEscape(id), nil, nil, nil)
	return err
}

// TriggerSchedule starts a run of the schedule now.
func (c *Client) TriggerSchedule(ctx context.Context, id string) (Run, error) {
	var out Run
	_, err := c.do(ctx, "POST", "/api/v1/schedules/"+url.PathEscape(id)+"/trigger", nil, nil, &out)
	return out, err
}
