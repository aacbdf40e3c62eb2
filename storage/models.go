package storage

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// Rows are unexported: they never leave this package. toDomain and the
// *From functions convert at the edge.

type runRow struct {
	bun.BaseModel `bun:"table:runs,alias:r"`

	ID              string           `bun:"id,pk"`
	WorkflowID      string           `bun:"workflow_id"`
	WorkflowVersion string           `bun:"workflow_version"`
	Status          domain.RunStatus `bun:"status"`
	Input           json.RawMessage  `bun:"input,type:jsonb"`
	Output          json.RawMessage  `bun:"output,type:jsonb,nullzero"`
	Error           *domain.RunError `bun:"error,type:jsonb"`
	IdempotencyKey  *string          `bun:"idempotency_key"`
	StartedBy       string           `bun:"started_by"`
	StartedByEmail  string           `bun:"started_by_email"`
	StartedByRole   domain.Role      `bun:"started_by_role"`
	NextSeq         int64            `bun:"next_seq"`
	CreatedAt       time.Time        `bun:"created_at"`
	UpdatedAt       time.Time        `bun:"updated_at"`

	// One suspension of the run, loaded with it by a resume; never written.
	Suspension *suspensionRow `bun:"rel:has-one,join:id=run_id"`
	// Hooked is read with the run's lock (hookedColumn) by the writers
	// that skip recording hook events when no subscription exists.
	Hooked bool `bun:"hooked,scanonly"`
}

func (r *runRow) toDomain() domain.Run {
	run := domain.Run{
		ID: r.ID, WorkflowID: r.WorkflowID, WorkflowVersion: r.WorkflowVersion, Status: r.Status,
		Input: r.Input, Output: r.Output, Error: r.Error, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		StartedBy: domain.Starter{ID: r.StartedBy, Email: r.StartedByEmail, Role: r.StartedByRole},
	}
	if r.IdempotencyKey != nil {
		run.IdempotencyKey = *r.IdempotencyKey
	}
	return run
}

type eventRow struct {
	bun.BaseModel `bun:"table:events,alias:e"`

	RunID     string          `bun:"run_id,pk"`
	Seq       int64           `bun:"seq,pk"`
	Type      string          `bun:"type"`
	Step      string          `bun:"step"`
	Payload   json.RawMessage `bun:"payload,type:jsonb"`
	CreatedAt time.Time       `bun:"created_at"`
}

type voteRow struct {
	bun.BaseModel `bun:"table:votes,alias:v"`

	SuspensionID string    `bun:"suspension_id,pk"`
	Voter        string    `bun:"voter,pk"`
	Decision     string    `bun:"decision"`
	Comment      string    `bun:"comment"`
	Channel      string    `bun:"channel"`
	LinkCreator  string    `bun:"link_creator"`
	RequestKey   *string   `bun:"request_key"`
	At           time.Time `bun:"at"`
}

func newVoteRow(suspensionID string, v domain.Vote) *voteRow {
	return &voteRow{SuspensionID: suspensionID, Voter: v.Voter, Decision: v.Decision, Comment: v.Comment,
		Channel: v.Channel, LinkCreator: v.LinkCreator, RequestKey: nullString(v.RequestKey), At: ts(v.At)}
}

func (v voteRow) toDomain() domain.Vote {
	return domain.Vote{Voter: v.Voter, Decision: v.Decision, Comment: v.Comment, Channel: v.Channel,
		LinkCreator: v.LinkCreator, RequestKey: derefString(v.RequestKey), At: v.At.UTC()}
}

type suspensionRow struct {
	bun.BaseModel `bun:"table:suspensions,alias:s"`

	ID               string                  `bun:"id,pk"`
	RunID            string                  `bun:"run_id"`
	WorkflowID       string                  `bun:"workflow_id"`
	WorkflowVersion  string                  `bun:"workflow_version"`
	StepName         string                  `bun:"step_name"`
	StepKey          string                  `bun:"step_key"`
	Kind             domain.SuspensionKind   `bun:"kind"`
	Reason           string                  `bun:"reason"`
	Status           domain.SuspensionStatus `bun:"status"`
	Checkpoint       json.RawMessage         `bun:"checkpoint,type:jsonb,nullzero"`
	ResumeStep       string                  `bun:"resume_step"`
	ResumeSchema     json.RawMessage         `bun:"resume_schema,type:jsonb,nullzero"`
	ResumeData       json.RawMessage         `bun:"resume_data,type:jsonb,nullzero"`
	ResumeRequestKey *string                 `bun:"resume_request_key"`
	Decision         *string                 `bun:"decision"`
	Assignee         string                  `bun:"assignee"`
	RunStartedBy     string                  `bun:"run_started_by"`
	Approvers        stringList              `bun:"approvers"`
	ApproverRole     domain.Role             `bun:"approver_role"`
	Policy           domain.ApprovalPolicy   `bun:"policy,type:json"`
	Requesters       stringList              `bun:"requesters"`
	Escalated        int                     `bun:"escalated"`
	Accept           stringList              `bun:"accept,type:json"`
	Title            string                  `bun:"title"`
	Fields           fieldList               `bun:"fields,type:json"`
	ReasonLabel      string                  `bun:"reason_label"`
	Instructions     string                  `bun:"instructions"`
	Slack            string                  `bun:"slack"`
	Deferred         json.RawMessage         `bun:"deferred,type:jsonb,nullzero"`
	WakeAt           *time.Time              `bun:"wake_at"`
	DeadlineAt       *time.Time              `bun:"deadline_at"`
	GroupID          *string                 `bun:"group_id"`
	GroupMode        domain.GroupMode        `bun:"group_mode,nullzero"`
	Branch           string                  `bun:"branch,nullzero"`
	Precompleted     bool                    `bun:"precompleted"`
	SuspendedAt      *time.Time              `bun:"suspended_at"`
	ResumedAt        *time.Time              `bun:"resumed_at"`
	ResumedBy        *string                 `bun:"resumed_by"`
	CreatedAt        time.Time               `bun:"created_at"`
}

func (s *suspensionRow) toDomain() (domain.Suspension, error) {
	d := domain.Suspension{
		ID: s.ID, RunID: s.RunID, WorkflowID: s.WorkflowID, WorkflowVersion: s.WorkflowVersion,
		StepName: s.StepName, StepKey: s.StepKey, Kind: s.Kind, Reason: s.Reason, Status: s.Status,
		Checkpoint: s.Checkpoint, ResumeStep: s.ResumeStep, ResumeData: s.ResumeData,
		ResumeSchema: s.ResumeSchema, Assignee: s.Assignee, RunStartedBy: s.RunStartedBy, WakeAt: utcPtr(s.WakeAt),
		Approvers: s.Approvers, ApproverRole: s.ApproverRole, Policy: s.Policy, Requesters: s.Requesters, Escalated: s.Escalated, Accept: s.Accept,
		Title: s.Title, Fields: s.Fields, ReasonLabel: s.ReasonLabel, Instructions: s.Instructions, Slack: s.Slack,
		ResumedAt: utcPtr(s.ResumedAt), Precompleted: s.Precompleted,
		Group: s.GroupMode, GroupKey: derefString(s.GroupID), Branch: s.Branch,
	}
	if s.SuspendedAt != nil {
		d.SuspendedAt = s.SuspendedAt.UTC()
	}
	if s.ResumedBy != nil {
		d.ResumedBy = *s.ResumedBy
	}
	if s.Decision != nil {
		d.Decision = *s.Decision
	}
	if s.ResumeRequestKey != nil {
		d.ResumeRequestKey = *s.ResumeRequestKey
	}
	cmds, err := domain.DecodeCommands(s.Deferred)
	if err != nil {
		return d, err
	}
	d.Deferred = cmds
	return d, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

type jobRow struct {
	bun.BaseModel `bun:"table:jobs,alias:j"`

	ID           int64           `bun:"id,pk,autoincrement"`
	Key          string          `bun:"key"`
	Kind         domain.JobKind  `bun:"kind"`
	RunID        string          `bun:"run_id"`
	Step         string          `bun:"step"`
	Input        json.RawMessage `bun:"input,type:jsonb,nullzero"`
	SuspensionID *string         `bun:"suspension_id"`
	Status       string          `bun:"status"`
	RunAt        time.Time       `bun:"run_at"`
	Attempt      int             `bun:"attempt"`
	LockedBy     *string         `bun:"locked_by"`
	LeaseUntil   *time.Time      `bun:"lease_until"`
	CreatedAt    time.Time       `bun:"created_at"`

	// Loaded with a claim; never written.
	Run        *runRow        `bun:"rel:belongs-to,join:run_id=id"`
	Suspension *suspensionRow `bun:"rel:belongs-to,join:suspension_id=id"`
}

func (j *jobRow) toDomain() domain.Job {
	job := domain.Job{
		ID: j.ID, Key: j.Key, Kind: j.Kind, RunID: j.RunID, Step: j.Step, Input: j.Input,
		RunAt: j.RunAt.UTC(), Attempt: j.Attempt, CreatedAt: j.CreatedAt.UTC(),
	}
	if j.SuspensionID != nil {
		job.SuspensionID = *j.SuspensionID
	}
	if j.LeaseUntil != nil {
		job.LeaseUntil = j.LeaseUntil.UTC()
	}
	if j.Run != nil && j.Run.ID != "" {
		run := j.Run.toDomain()
		job.Run = &run
	}
	if j.Suspension != nil && j.Suspension.ID != "" {
		// A suspension that does not decode is left for the worker to read,
		// which reports the error where it can be handled.
		if s, err := j.Suspension.toDomain(); err == nil {
			job.Suspension = &s
		}
	}
	return job
}

func jobRowFrom(j domain.NewJob, now time.Time) *jobRow {
	row := &jobRow{Key: j.Key, Kind: j.Kind, RunID: j.RunID, Step: j.Step, Input: j.Input, Status: jobAvailable, RunAt: ts(j.RunAt), CreatedAt: ts(now)}
	if j.SuspensionID != "" {
		row.SuspensionID = &j.SuspensionID
	}
	return row
}

// resumeJobRow is the job that continues a run from one of its
// suspensions, due at the given time: a timer's wake-up, or at once for a
// resume that has come.
func resumeJobRow(runID, stepKey, suspensionID string, at, now time.Time) *jobRow {
	return jobRowFrom(domain.NewJob{Key: domain.ResumeJobKey(runID, stepKey), Kind: domain.JobResume, RunID: runID, SuspensionID: suspensionID, RunAt: at}, now)
}

const (
	jobAvailable = "available"
	jobRunning   = "running"
)

// ts normalises a time for storage: UTC, microsecond precision (what
// PostgreSQL keeps), so a value read back compares equal to the one written
// and SQLite's text timestamps order correctly.
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// stringList is a list of strings stored as a JSON array, [] when empty
// (never null): a suspension's approvers (lower-case emails, in a text
// column, where a founder's list finds the suspensions naming them by the
// quoted email) and its accepted document types.
type stringList []string

func (a stringList) Value() (driver.Value, error) {
	if len(a) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal([]string(a))
	return string(b), err
}

func (a *stringList) Scan(src any) error {
	list, err := scanJSONList[string](src, "string list")
	if err != nil {
		return err
	}
	*a = list
	return nil
}

// scanJSONList decodes a column holding a JSON array, read as text or
// bytes; NULL is nil. what names the column's type in errors.
func scanJSONList[T any](src any, what string) ([]T, error) {
	var b []byte
	switch v := src.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	case nil:
		return nil, nil
	default:
		return nil, fmt.Errorf("%s: unexpected %T", what, src)
	}
	var list []T
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return list, nil
}

// fieldList is a suspension's presentation fields stored as a JSON array,
// [] when empty.
type fieldList []domain.Field

// Value writes the fields with their values as given: json.Marshal would
// escape <, > and & in them.
func (a fieldList) Value() (driver.Value, error) {
	if len(a) == 0 {
		return "[]", nil
	}
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode([]domain.Field(a)); err != nil {
		return nil, err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func (a *fieldList) Scan(src any) error {
	list, err := scanJSONList[domain.Field](src, "field list")
	if err != nil {
		return err
	}
	if len(list) == 0 {
		list = nil
	}
	*a = list
	return nil
}
