package domain

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// A schedule starts runs of a workflow by the calendar: at the times a
// cron rule or a fixed interval names, in a time zone. It is a row, not a
// goroutine: its next fire time is stored with it, and whichever server
// claims it when that time comes starts the run and stores the next fire
// in the same transaction, fenced on its claim, so that every fire time
// starts at most one run however many servers run and whatever crashes.

// Overlap says what a fire does while the last run the schedule started
// has not finished.
type Overlap string

// Overlap policies.
const (
	// OverlapSkip starts nothing and records the fire as skipped.
	OverlapSkip Overlap = "skip"
	// OverlapBufferOne keeps one fire and starts it once the last run has
	// finished; fires beyond that one are skipped.
	OverlapBufferOne Overlap = "buffer_one"
	// OverlapAllow starts a run at every fire.
	OverlapAllow Overlap = "allow"
)

// FireOutcome is what became of one fire time.
type FireOutcome string

// Fire outcomes.
const (
	FireStarted  FireOutcome = "started"
	FireSkipped  FireOutcome = "skipped"
	FireBuffered FireOutcome = "buffered"
	// FireMissed is a fire that came while no server ran, longer ago than
	// the schedule's catch-up window: it is recorded, not run.
	FireMissed FireOutcome = "missed"
	// FireFailed is a fire whose run could not start: its workflow is no
	// longer registered, or the input no longer suits it.
	FireFailed FireOutcome = "failed"
)

// Schedule defaults and bounds.
const (
	DefaultCatchUpWindow = time.Minute
	MinScheduleInterval  = time.Second
	// MaxCatchUpWindow bounds how far back a schedule catches up: a fire
	// older than a week is no longer what anyone is waiting for.
	MaxCatchUpWindow = 7 * 24 * time.Hour
	// ScheduleStarterPrefix begins the starter id of the runs a schedule
	// starts: "schedule:" and the schedule's id.
	ScheduleStarterPrefix = "schedule:"
	// ScheduleFromWorkflow is the source of the schedules a workflow
	// document carries; ScheduleFromAPI of the others.
	ScheduleFromWorkflow = "workflow"
	ScheduleFromAPI      = "api"
)

// ScheduleSpec is what a person, a document or the embedding package says
// a schedule is. Exactly one of Cron and Every is set.
type ScheduleSpec struct {
	ID         string
	WorkflowID string
	// Cron is a five-field cron rule (minute hour day-of-month month
	// day-of-week) or one of @yearly, @monthly, @weekly, @daily, @hourly
	// (and @annually, @midnight).
	Cron string
	// Every is a fixed interval, counted from the Unix epoch, so that
	// every 15 minutes fires at :00, :15, :30 and :45.
	Every    time.Duration
	Timezone string
	// Input is the runs' input. When it is an object (or empty), each run
	// gets it with "scheduledAt", its fire time, added.
	Input   json.RawMessage
	Overlap Overlap
	// CatchUpWindow is how late a fire may still start after downtime;
	// older fires are recorded missed.
	CatchUpWindow time.Duration
	Paused        bool
	Note          string
}

// Schedule is a stored schedule with where it stands.
type Schedule struct {
	ScheduleSpec
	// Source is "api", or "workflow" for the schedules a workflow document
	// carries, which registering a new version of it replaces.
	Source string
	// Revision grows with every change of the spec.
	Revision int
	// NextFireAt is the next fire time; zero while paused.
	NextFireAt time.Time
	// BufferedAt is the fire a buffer_one schedule keeps for when its last
	// run ends; zero when none is kept.
	BufferedAt time.Time
	// LastRunID is the newest run the schedule started, and
	// LastRunActive whether it had not finished when the schedule was
	// read for a fire.
	LastRunID     string
	LastRunActive bool
	LastFireAt    time.Time
	LastOutcome   FireOutcome
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Attempt and LockedBy are the claim a fire commits under.
	Attempt  int
	LockedBy string
}

// ComingFires are the schedule's next n fire times; none while it is
// paused.
func (s Schedule) ComingFires(n int) []time.Time {
	rule, err := s.Rule()
	if err != nil || s.NextFireAt.IsZero() || n < 1 {
		return nil
	}
	return append([]time.Time{s.NextFireAt}, rule.Fires(s.NextFireAt, n-1)...)
}

// ScheduleFire is one fire time as recorded: what became of it, and the
// run it started. A span of missed fires is one record: At is the first,
// Until the last, Count how many.
type ScheduleFire struct {
	ScheduleID string
	At         time.Time
	Outcome    FireOutcome
	RunID      string
	Count      int
	Until      time.Time
	// Manual is a fire someone asked for ("trigger"), not the calendar.
	Manual bool
	// By and ByID are the email and id of the person who asked, for a
	// manual fire.
	By         string
	ByID       string `json:"-"`
	Message    string
	RecordedAt time.Time
	// Run is the run to start, for a started fire on its way to the store.
	Run *NewRun `json:"-"`
}

// FireRequest commits what one claim of a schedule decided, as one
// transition: the runs its fires start, the fires' records and the
// schedule's next fire, all at once or not at all. A claimed fire is fenced
// on the claim (Attempt and Worker): a server whose lease was taken over
// commits nothing (ErrStale). A manual fire (Attempt 0) leaves the next fire
// as it is.
type FireRequest struct {
	ScheduleID string
	Attempt    int
	Worker     string
	Fires      []ScheduleFire
	NextFireAt time.Time
	// DueAt is when the schedule is next looked at: its next fire, or
	// sooner while a buffered fire waits for the last run to end.
	DueAt      time.Time
	BufferedAt time.Time
	Now        time.Time
}

// StartedRun is the newest run the request starts, or "".
func (r FireRequest) StartedRun() string {
	for i := len(r.Fires) - 1; i >= 0; i-- {
		if r.Fires[i].Run != nil {
			return r.Fires[i].Run.ID
		}
	}
	return ""
}

// ScheduleStarter is the starter of the runs schedule id starts.
func ScheduleStarter(id string) Starter { return Starter{ID: ScheduleStarterPrefix + id} }

// Schedule is the id of the schedule that started the run, or "".
func (s Starter) Schedule() string {
	id, ok := strings.CutPrefix(s.ID, ScheduleStarterPrefix)
	if !ok {
		return ""
	}
	return id
}

// ScheduleRunKey is the idempotency key of the run a schedule's fire at at
// starts: one run per fire time, whatever happens.
func ScheduleRunKey(id string, at time.Time) string {
	return ScheduleStarterPrefix + id + ":" + at.UTC().Format("2006-01-02T15:04:05.000Z")
}

var scheduleID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

// cronParser takes standard five-field rules and the common descriptors.
// "@every" is left to Every, and a rule's own time zone (CRON_TZ=) to
// Timezone, so that a schedule says each thing in one place.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Validate checks s and fills its defaults: UTC, skip, a one-minute
// catch-up window. Every problem is named by its JSON Pointer.
func (s *ScheduleSpec) Validate() error {
	var bad []FieldError
	add := func(field, msg string) { bad = append(bad, FieldError{Field: field, Message: msg}) }
	if !scheduleID.MatchString(s.ID) {
		add("/id", "must be 1 to 100 lower-case letters, digits, dots, dashes or underscores, starting with a letter or digit")
	}
	if s.WorkflowID == "" {
		add("/workflowId", "is required")
	}
	s.Cron = strings.TrimSpace(s.Cron)
	switch {
	case s.Cron == "" && s.Every == 0:
		add("/cron", "give a cron rule or everyMs")
	case s.Cron != "" && s.Every != 0:
		add("/everyMs", "give a cron rule or everyMs, not both")
	case s.Cron != "":
		if spec, err := parseCron(s.Cron); err != nil {
			add("/cron", err.Error())
		} else if spec.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
			add("/cron", "never fires (no such day)") // 30 February; 29 February comes within five years
		}
	case s.Every < MinScheduleInterval:
		add("/everyMs", "must be at least 1000 (one second)")
	}
	if s.Timezone == "" {
		s.Timezone = "UTC"
	}
	if _, err := loadZone(s.Timezone); err != nil {
		add("/timezone", "is not an IANA time zone name such as Europe/Lisbon")
	}
	switch s.Overlap {
	case "":
		s.Overlap = OverlapSkip
	case OverlapSkip, OverlapBufferOne, OverlapAllow:
	default:
		add("/overlap", "must be skip, buffer_one or allow")
	}
	switch {
	case s.CatchUpWindow == 0:
		s.CatchUpWindow = DefaultCatchUpWindow
	case s.CatchUpWindow < time.Second || s.CatchUpWindow > MaxCatchUpWindow:
		add("/catchUpWindowMs", "must be between 1000 (one second) and 604800000 (a week)")
	}
	if len(s.Input) > 0 {
		if err := CheckJSON(s.Input); err != nil {
			add("/input", "is not valid JSON")
		}
	}
	if len(s.Note) > 500 {
		add("/note", "must be at most 500 characters")
	}
	if len(bad) > 0 {
		return &ValidationError{Code: CodeValidation, Message: "The schedule is not valid", Fields: bad}
	}
	return nil
}

// Same says whether s and o say the same schedule.
func (s ScheduleSpec) Same(o ScheduleSpec) bool {
	return s.ID == o.ID && s.WorkflowID == o.WorkflowID && s.Cron == o.Cron && s.Every == o.Every && s.Timezone == o.Timezone &&
		SameJSON(OrNull(s.Input), OrNull(o.Input)) && s.Overlap == o.Overlap && s.CatchUpWindow == o.CatchUpWindow &&
		s.Paused == o.Paused && s.Note == o.Note
}

// SameTiming says whether s and o fire at the same times: the same rule
// in the same zone, both paused or both not.
func (s ScheduleSpec) SameTiming(o ScheduleSpec) bool {
	return s.Cron == o.Cron && s.Every == o.Every && s.Timezone == o.Timezone && s.Paused == o.Paused
}

func parseCron(rule string) (*cron.SpecSchedule, error) {
	if strings.HasPrefix(rule, "@every") {
		return nil, fmt.Errorf("@every is not a cron rule: use everyMs")
	}
	if strings.Contains(rule, "TZ=") {
		return nil, fmt.Errorf("give the time zone in timezone, not in the rule")
	}
	parsed, err := cronParser.Parse(rule)
	if err != nil {
		return nil, fmt.Errorf("is not a cron rule: %s", strings.TrimPrefix(err.Error(), "expected exactly 5 fields, found "))
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("is not a cron rule")
	}
	// The rule is matched against the wall clock as a zone-less time (see
	// Rule.Next), so it never sees a daylight saving change.
	spec.Location = time.UTC
	return spec, nil
}

// loadZone is time.LoadLocation for an IANA name; "Local" is refused, for
// a server's own zone is no zone a schedule can rely on.
func loadZone(name string) (*time.Location, error) {
	if name == "Local" || name == "" {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	return time.LoadLocation(name)
}

// Rule is a schedule's fire times in its time zone.
type Rule struct {
	spec  *cron.SpecSchedule
	every time.Duration
	loc   *time.Location
}

// Rule is the rule of a valid spec.
func (s ScheduleSpec) Rule() (Rule, error) {
	loc, err := loadZone(s.Timezone)
	if err != nil {
		return Rule{}, err
	}
	if s.Every > 0 {
		return Rule{every: s.Every, loc: loc}, nil
	}
	spec, err := parseCron(s.Cron)
	if err != nil {
		return Rule{}, err
	}
	return Rule{spec: spec, loc: loc}, nil
}

// Next is the first fire time after after; zero when the rule never fires
// again (a 30 February).
//
// A cron rule is matched on the wall clock of the rule's zone. A wall
// time that a daylight saving change skips (02:30 on the night clocks go
// forward) fires at the change's instant, the first valid one after it,
// once however many of the rule's times the gap swallows; a wall time
// that happens twice (the hour clocks go back) fires at its first
// occurrence only.
func (r Rule) Next(after time.Time) time.Time {
	if r.every > 0 {
		n := after.UnixMilli()/r.every.Milliseconds() + 1
		return time.UnixMilli(n * r.every.Milliseconds()).UTC()
	}
	wall := after.In(r.loc)
	naive := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), 0, time.UTC)
	for range 10000 { // each turn moves on by at least a minute
		naive = r.spec.Next(naive)
		if naive.IsZero() {
			return time.Time{}
		}
		if at := r.instant(naive); at.After(after) {
			return at.UTC()
		}
	}
	return time.Time{}
}

// instant is the first instant the zone's clock shows naive's wall time,
// or, when it never shows it, the instant the clock jumped over it.
func (r Rule) instant(naive time.Time) time.Time {
	at := time.Date(naive.Year(), naive.Month(), naive.Day(), naive.Hour(), naive.Minute(), 0, 0, r.loc)
	if shown := time.Date(at.Year(), at.Month(), at.Day(), at.Hour(), at.Minute(), 0, 0, time.UTC); !shown.Equal(naive) {
		// Skipped: the change's instant, which bounds the zone Go read
		// the wall time in, on one side or the other.
		start, end := at.ZoneBounds()
		if shown.Before(naive) {
			return end
		}
		return start
	}
	// Of two instants showing the same wall time, Go's choice is not
	// promised: take the one an offset change earlier, if it shows it too.
	if start, _ := at.ZoneBounds(); !start.IsZero() {
		before := start.Add(-time.Nanosecond)
		_, offBefore := before.Zone()
		_, offAt := at.Zone()
		if earlier := at.Add(time.Duration(offAt-offBefore) * time.Second); offBefore > offAt && earlier.Before(start) {
			return earlier
		}
	}
	return at
}

// Fires are the next n fire times after after.
func (r Rule) Fires(after time.Time, n int) []time.Time {
	var out []time.Time
	for t := after; len(out) < n; {
		t = r.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// FirePlan is what a claimed schedule's fires come to at now.
type FirePlan struct {
	Fires      []ScheduleFire
	NextFireAt time.Time
	DueAt      time.Time
	BufferedAt time.Time
}

// maxFiresAtOnce bounds the fires one claim starts; a schedule further
// behind catches up over the next claims, which come at once.
const maxFiresAtOnce = 100

// maxMissedCounted bounds the missed fires one record counts, so that a
// per-second schedule that slept for a month is passed over in bounded
// time; the record's Until is then the last one counted.
const maxMissedCounted = 1_000_000

// PlanFires decides what s's fires due at now come to. Fires older than
// the catch-up window are one missed record; the others, oldest first,
// start a run or not as the overlap policy says, a run started here
// counting as not finished. A fire a buffer_one schedule kept starts first
// once the last run has finished. Started fires carry no run yet: the
// engine makes each (see FireRequest).
func PlanFires(s Schedule, r Rule, now time.Time) FirePlan {
	p := FirePlan{BufferedAt: s.BufferedAt}
	active := s.LastRunActive
	if !p.BufferedAt.IsZero() && !active {
		p.Fires = append(p.Fires, ScheduleFire{At: p.BufferedAt, Outcome: FireStarted})
		p.BufferedAt, active = time.Time{}, true
	}
	t := s.NextFireAt
	if cut := now.Add(-s.CatchUpWindow); !t.IsZero() && t.Before(cut) {
		m := ScheduleFire{At: t, Outcome: FireMissed}
		for ; !t.IsZero() && t.Before(cut) && m.Count < maxMissedCounted; t = r.Next(t) {
			m.Until, m.Count = t, m.Count+1
		}
		if !t.IsZero() && t.Before(cut) {
			t = r.Next(cut.Add(-time.Nanosecond))
		}
		p.Fires = append(p.Fires, m)
	}
	for n := 0; !t.IsZero() && !t.After(now) && n < maxFiresAtOnce; t, n = r.Next(t), n+1 {
		out := FireStarted
		switch {
		case !active || s.Overlap == OverlapAllow:
			active = true
		case s.Overlap == OverlapBufferOne && p.BufferedAt.IsZero():
			out, p.BufferedAt = FireBuffered, t
		default:
			out = FireSkipped
		}
		p.Fires = append(p.Fires, ScheduleFire{At: t, Outcome: out})
	}
	p.NextFireAt, p.DueAt = t, t
	if !p.BufferedAt.IsZero() {
		// Look again for the end of the last run: soon at first, then
		// less often the longer it runs, never more than a minute apart.
		wait := min(max(now.Sub(p.BufferedAt)/10, time.Second), time.Minute)
		if check := now.Add(wait); p.DueAt.IsZero() || check.Before(p.DueAt) {
			p.DueAt = check
		}
	}
	return p
}

// ScheduleInput is the input of the run a fire at at starts: the
// schedule's input, with "scheduledAt" added when it is an object that
// does not set it itself.
func ScheduleInput(input json.RawMessage, at time.Time) json.RawMessage {
	stamp := at.UTC().Format(time.RFC3339Nano)
	trimmed := strings.TrimSpace(string(input))
	if trimmed == "" || trimmed == "null" {
		return MustJSON(map[string]string{"scheduledAt": stamp})
	}
	var obj map[string]json.RawMessage
	if !strings.HasPrefix(trimmed, "{") || json.Unmarshal(input, &obj) != nil {
		return input
	}
	if _, set := obj["scheduledAt"]; set {
		return input
	}
	obj["scheduledAt"] = MustJSON(stamp)
	return MustJSON(obj)
}

// ScheduleFilter selects schedules for listing, by id.
type ScheduleFilter struct {
	WorkflowID string
	Cursor     string
	Limit      int
}

// ScheduleStore keeps schedules and their fires. The fires themselves
// commit through the one door (Transition.Fire).
type ScheduleStore interface {
	// CreateSchedule inserts s; an id in use is ErrConflict.
	CreateSchedule(ctx context.Context, s Schedule, audit *AuditEntry) (Schedule, error)
	// UpdateSchedule replaces the spec of the schedule of s.ID whose
	// revision is still s.Revision (else ErrConflict), and its next fire
	// too when replan is set (a kept fire a buffer_one schedule waited to
	// start is then recorded skipped). It voids any claim on it, so that
	// a fire decided under the old spec commits nothing; without replan
	// the schedule keeps the timing its fires gave it meanwhile.
	UpdateSchedule(ctx context.Context, s Schedule, replan bool, audit *AuditEntry) (Schedule, error)
	// DeleteSchedule removes a schedule and its fire records; the runs
	// it started stay.
	DeleteSchedule(ctx context.Context, id string, audit *AuditEntry) error
	Schedule(ctx context.Context, id string) (Schedule, error)
	Schedules(ctx context.Context, f ScheduleFilter) ([]Schedule, string, error)
	// ScheduleFires are a schedule's newest fire records, newest first.
	ScheduleFires(ctx context.Context, id string, limit int) ([]ScheduleFire, error)
	// ClaimSchedules claims up to limit schedules due at now for worker
	// until now+lease, each read with whether its last run is still
	// going.
	ClaimSchedules(ctx context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]Schedule, error)
	// NextScheduleDue is when the earliest schedule not claimed at now
	// is next due; zero when none is.
	NextScheduleDue(ctx context.Context, now time.Time) (time.Time, error)
	// ReplaceWorkflowSchedules makes the schedules a workflow document
	// carries those given: new ones are created, changed ones updated
	// (their next fire taken from want only when their rule changed), and
	// those no longer carried deleted. Whether an existing one is paused
	// is its admins' to say, not the document's: it is kept.
	ReplaceWorkflowSchedules(ctx context.Context, workflowID string, want []Schedule, audit *AuditEntry) error
}
