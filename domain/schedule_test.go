package domain_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

func rule(t *testing.T, spec domain.ScheduleSpec) domain.Rule {
	t.Helper()
	spec.ID, spec.WorkflowID = "s", "wf"
	if err := spec.Validate(); err != nil {
		t.Fatalf("%+v: %v", spec, err)
	}
	r, err := spec.Rule()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestScheduleRuleForms(t *testing.T) {
	cases := []struct {
		cron, zone, after string
		want              []string
	}{
		{"*/15 * * * *", "UTC", "2026-05-04T10:07:00Z", []string{"2026-05-04T10:15:00Z", "2026-05-04T10:30:00Z"}},
		{"* * * * *", "UTC", "2026-05-04T10:07:30Z", []string{"2026-05-04T10:08:00Z", "2026-05-04T10:09:00Z"}},
		{"0 9 * * 1-5", "Europe/Lisbon", "2026-05-08T09:00:00+01:00", []string{"2026-05-11T09:00:00+01:00", "2026-05-12T09:00:00+01:00"}},
		{"0 9 * * MON,WED,FRI", "UTC", "2026-05-04T09:00:00Z", []string{"2026-05-06T09:00:00Z", "2026-05-08T09:00:00Z"}},
		{"5 4 * * sun", "UTC", "2026-05-04T00:00:00Z", []string{"2026-05-10T04:05:00Z", "2026-05-17T04:05:00Z"}},
		{"0 */6 * * *", "UTC", "2026-05-04T07:00:00Z", []string{"2026-05-04T12:00:00Z", "2026-05-04T18:00:00Z"}},
		{"0 0 1 * *", "America/New_York", "2026-05-04T00:00:00Z", []string{"2026-06-01T00:00:00-04:00", "2026-07-01T00:00:00-04:00"}},
		{"0 0 29 2 *", "UTC", "2026-05-04T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"@hourly", "UTC", "2026-05-04T10:00:00Z", []string{"2026-05-04T11:00:00Z", "2026-05-04T12:00:00Z"}},
		{"@daily", "Europe/Lisbon", "2026-05-04T10:00:00Z", []string{"2026-05-05T00:00:00+01:00", "2026-05-06T00:00:00+01:00"}},
		{"@weekly", "UTC", "2026-05-04T10:00:00Z", []string{"2026-05-10T00:00:00Z", "2026-05-17T00:00:00Z"}},
		{"@monthly", "UTC", "2026-05-04T10:00:00Z", []string{"2026-06-01T00:00:00Z", "2026-07-01T00:00:00Z"}},
		{"@yearly", "UTC", "2026-05-04T10:00:00Z", []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
		// Daylight saving, New York: clocks go forward at 02:00 on 8
		// March 2026 and back at 02:00 on 1 November.
		{"30 2 * * *", "America/New_York", "2026-03-07T03:00:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"*/20 * * * *", "America/New_York", "2026-03-08T01:50:00-05:00", []string{"2026-03-08T03:00:00-04:00", "2026-03-08T03:20:00-04:00"}},
		{"30 1 * * *", "America/New_York", "2026-10-31T12:00:00-04:00", []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"*/30 * * * *", "America/New_York", "2026-11-01T00:45:00-04:00", []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T02:00:00-05:00"}},
		// A wall time of the hour that happens twice, asked for from its
		// second pass, is not run again.
		{"30 1 * * *", "America/New_York", "2026-11-01T01:10:00-05:00", []string{"2026-11-02T01:30:00-05:00"}},
		// Lisbon: forward at 01:00 on 29 March 2026, back at 02:00 on 25
		// October.
		{"30 1 * * *", "Europe/Lisbon", "2026-03-28T12:00:00Z", []string{"2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"}},
		{"30 1 * * *", "Europe/Lisbon", "2026-10-24T12:00:00Z", []string{"2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00Z"}},
		{"0 * * * *", "Europe/Lisbon", "2026-10-25T00:30:00+01:00", []string{"2026-10-25T01:00:00+01:00", "2026-10-25T02:00:00Z"}},
	}
	for _, c := range cases {
		r := rule(t, domain.ScheduleSpec{Cron: c.cron, Timezone: c.zone})
		got := r.Fires(at(t, c.after), len(c.want))
		for i, w := range c.want {
			if i >= len(got) || !got[i].Equal(at(t, w)) {
				t.Errorf("%q in %s after %s: fire %d = %v, want %s", c.cron, c.zone, c.after, i, got, w)
				break
			}
		}
	}
}

// Every time a gap swallows fires once at the end of the gap.
func TestScheduleGapFiresOnce(t *testing.T) {
	r := rule(t, domain.ScheduleSpec{Cron: "*/15 * * * *", Timezone: "America/New_York"})
	got := r.Fires(at(t, "2026-03-08T01:50:00-05:00"), 3)
	want := []string{"2026-03-08T03:00:00-04:00", "2026-03-08T03:15:00-04:00", "2026-03-08T03:30:00-04:00"}
	for i, w := range want {
		if !got[i].Equal(at(t, w)) {
			t.Fatalf("fires %v, want %v", got, want)
		}
	}
}

func TestScheduleEvery(t *testing.T) {
	r := rule(t, domain.ScheduleSpec{Every: 15 * time.Minute, Timezone: "Asia/Kolkata"})
	got := r.Fires(at(t, "2026-05-04T10:07:00Z"), 2)
	if !got[0].Equal(at(t, "2026-05-04T10:15:00Z")) || !got[1].Equal(at(t, "2026-05-04T10:30:00Z")) {
		t.Fatalf("every 15 minutes: %v", got)
	}
	if n := r.Next(at(t, "2026-05-04T10:15:00Z")); !n.Equal(at(t, "2026-05-04T10:30:00Z")) {
		t.Fatalf("after a fire: %v", n)
	}
}

func TestScheduleSpecValidation(t *testing.T) {
	bad := map[string]domain.ScheduleSpec{
		"/id":              {ID: "Monthly Review", WorkflowID: "wf", Cron: "@daily"},
		"/workflowId":      {ID: "a", Cron: "@daily"},
		"/cron":            {ID: "a", WorkflowID: "wf"},
		"/everyMs":         {ID: "a", WorkflowID: "wf", Cron: "@daily", Every: time.Minute},
		"/timezone":        {ID: "a", WorkflowID: "wf", Cron: "@daily", Timezone: "Mars/Olympus"},
		"/overlap":         {ID: "a", WorkflowID: "wf", Cron: "@daily", Overlap: "queue"},
		"/catchUpWindowMs": {ID: "a", WorkflowID: "wf", Cron: "@daily", CatchUpWindow: time.Millisecond},
	}
	for field, spec := range bad {
		err := spec.Validate()
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || len(ve.Fields) == 0 || ve.Fields[0].Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
	for _, c := range []string{"61 * * * *", "* * * *", "@every 1m", "CRON_TZ=UTC 0 9 * * *", "0 9 * * 1-5 2026", "@fortnightly", "0 0 30 2 *"} {
		spec := domain.ScheduleSpec{ID: "a", WorkflowID: "wf", Cron: c}
		if err := spec.Validate(); err == nil {
			t.Errorf("%q was taken", c)
		}
	}
	spec := domain.ScheduleSpec{ID: "monthly-review", WorkflowID: "wf", Cron: "0 9 1 * *"}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if spec.Timezone != "UTC" || spec.Overlap != domain.OverlapSkip || spec.CatchUpWindow != time.Minute {
		t.Fatalf("defaults: %+v", spec)
	}
}

func TestScheduleWords(t *testing.T) {
	cases := map[string]domain.ScheduleSpec{
		"Every weekday at 09:00 Europe/Lisbon":            {Cron: "0 9 * * 1-5", Timezone: "Europe/Lisbon"},
		"Every day at 00:00 UTC":                          {Cron: "@daily"},
		"Every Sunday at 00:00 UTC":                       {Cron: "@weekly", Timezone: "UTC"},
		"On the 1st of every month at 09:00 UTC":          {Cron: "0 9 1 * *"},
		"Every year on 1 January at 00:00 UTC":            {Cron: "@yearly"},
		"Every Monday, Wednesday and Friday at 17:30 UTC": {Cron: "30 17 * * MON,WED,FRI"},
		"Every 15 minutes UTC":                            {Cron: "*/15 * * * *"},
		"Every hour, on the hour UTC":                     {Cron: "@hourly"},
		"Every 6 hours at minute 0 UTC":                   {Cron: "0 */6 * * *"},
		"On the cron rule “0 9 1-7 * 1” UTC":              {Cron: "0 9 1-7 * 1"},
		"Every 15 minutes":                                {Every: 15 * time.Minute},
		"Every 90 seconds":                                {Every: 90 * time.Second},
		"Every day":                                       {Every: 24 * time.Hour},
	}
	for want, spec := range cases {
		if got := spec.Words(); got != want {
			t.Errorf("%+v: %q, want %q", spec, got, want)
		}
	}
}

func planned(p domain.FirePlan) []string {
	var out []string
	for _, f := range p.Fires {
		out = append(out, f.At.Format("15:04")+" "+string(f.Outcome))
	}
	return out
}

func same(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPlanFiresCatchUpAndOverlap(t *testing.T) {
	now := at(t, "2026-05-04T10:00:30Z")
	spec := domain.ScheduleSpec{ID: "s", WorkflowID: "wf", Cron: "* * * * *"}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	r, _ := spec.Rule()
	// Down since 09:55: 09:56 to 09:59 are more than a minute late, 09:59
	// only 90 s: missed; 10:00 is 30 s late: within the window.
	base := domain.Schedule{ScheduleSpec: spec, NextFireAt: at(t, "2026-05-04T09:56:00Z")}
	cases := []struct {
		overlap domain.Overlap
		active  bool
		window  time.Duration
		want    []string
	}{
		{domain.OverlapAllow, false, time.Minute, []string{"09:56 missed", "10:00 started"}},
		{domain.OverlapAllow, false, 3 * time.Minute, []string{"09:56 missed", "09:58 started", "09:59 started", "10:00 started"}},
		{domain.OverlapSkip, false, 3 * time.Minute, []string{"09:56 missed", "09:58 started", "09:59 skipped", "10:00 skipped"}},
		{domain.OverlapSkip, true, time.Minute, []string{"09:56 missed", "10:00 skipped"}},
		{domain.OverlapBufferOne, false, 3 * time.Minute, []string{"09:56 missed", "09:58 started", "09:59 buffered", "10:00 skipped"}},
		{domain.OverlapBufferOne, true, time.Minute, []string{"09:56 missed", "10:00 buffered"}},
	}
	for _, c := range cases {
		s := base
		s.Overlap, s.LastRunActive, s.CatchUpWindow = c.overlap, c.active, c.window
		p := domain.PlanFires(s, r, now)
		if got := planned(p); !same(got, c.want) {
			t.Errorf("%s active=%v window=%v: %v, want %v", c.overlap, c.active, c.window, got, c.want)
		}
		if !p.NextFireAt.Equal(at(t, "2026-05-04T10:01:00Z")) {
			t.Errorf("%s: next fire %v", c.overlap, p.NextFireAt)
		}
	}
	p := domain.PlanFires(base, r, now)
	if m := p.Fires[0]; m.Count != 4 || !m.Until.Equal(at(t, "2026-05-04T09:59:00Z")) {
		t.Errorf("missed record: %+v", m)
	}
}

func TestPlanFiresBufferedStartsWhenTheRunEnds(t *testing.T) {
	spec := domain.ScheduleSpec{ID: "s", WorkflowID: "wf", Cron: "0 * * * *", Overlap: domain.OverlapBufferOne}
	_ = spec.Validate()
	r, _ := spec.Rule()
	buffered := at(t, "2026-05-04T10:00:00Z")
	s := domain.Schedule{ScheduleSpec: spec, NextFireAt: at(t, "2026-05-04T11:00:00Z"), BufferedAt: buffered, LastRunActive: true}
	now := at(t, "2026-05-04T10:20:00Z")
	p := domain.PlanFires(s, r, now)
	if len(p.Fires) != 0 || !p.BufferedAt.Equal(buffered) || !p.DueAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("still running: %+v", p)
	}
	s.LastRunActive = false
	p = domain.PlanFires(s, r, now)
	if got := planned(p); !same(got, []string{"10:00 started"}) || !p.BufferedAt.IsZero() || !p.DueAt.Equal(s.NextFireAt) {
		t.Fatalf("ended: %v %+v", got, p)
	}
}

func TestPlanFiresAfterALongSleep(t *testing.T) {
	spec := domain.ScheduleSpec{ID: "s", WorkflowID: "wf", Every: time.Second}
	_ = spec.Validate()
	r, _ := spec.Rule()
	now := at(t, "2026-05-04T10:00:00Z")
	s := domain.Schedule{ScheduleSpec: spec, NextFireAt: now.Add(-60 * 24 * time.Hour)}
	started := time.Now()
	p := domain.PlanFires(s, r, now)
	if time.Since(started) > 5*time.Second {
		t.Fatalf("planning took %v", time.Since(started))
	}
	if p.Fires[0].Outcome != domain.FireMissed || !p.NextFireAt.Equal(now.Add(time.Second)) {
		t.Fatalf("%+v next %v", p.Fires[0], p.NextFireAt)
	}
	// The missed record, then the 61 fires of the last minute, which the
	// catch-up window still takes.
	if n := len(p.Fires); n != 1+61 {
		t.Fatalf("%d fires planned at once", n)
	}
}

func TestScheduleInput(t *testing.T) {
	fire := at(t, "2026-05-04T10:00:00Z")
	cases := map[string]string{
		``:                       `{"scheduledAt":"2026-05-04T10:00:00Z"}`,
		`{"month":"May"}`:        `{"month":"May","scheduledAt":"2026-05-04T10:00:00Z"}`,
		`{"scheduledAt":"mine"}`: `{"scheduledAt":"mine"}`,
		`[1,2]`:                  `[1,2]`,
	}
	for in, want := range cases {
		got := domain.ScheduleInput(json.RawMessage(in), fire)
		if !domain.SameJSON(got, json.RawMessage(want)) {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	if k := domain.ScheduleRunKey("monthly", fire); k != "schedule:monthly:2026-05-04T10:00:00.000Z" {
		t.Fatal(k)
	}
}
