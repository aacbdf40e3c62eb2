package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	apiclient "github.com/tollgatehq/tollgate/client"
)

type schedulesCLI struct {
	List    schedulesListCmd    `cmd:"" help:"List schedules, by id (admins' keys)."`
	Show    schedulesShowCmd    `cmd:"" help:"Show a schedule, its next fires and its last fires."`
	Create  schedulesCreateCmd  `cmd:"" help:"Create a schedule: --workflow W and --cron RULE or --every DURATION."`
	Pause   schedulesPauseCmd   `cmd:"" help:"Pause a schedule: it fires nothing until resumed."`
	Resume  schedulesResumeCmd  `cmd:"" help:"Resume a paused schedule; the fires it passed over are not replayed."`
	Trigger schedulesTriggerCmd `cmd:"" help:"Start a run of a schedule now."`
	Delete  schedulesDeleteCmd  `cmd:"" help:"Delete a schedule and its fire records (the runs it started stay)."`
}

type schedulesListCmd struct {
	apiFlags
	Workflow string `help:"Only schedules of this workflow."`
	Limit    int    `default:"50" help:"Schedules per page (1-500)."`
	Cursor   string `help:"The page after the one that handed out this cursor."`
	All      bool   `help:"Every page, not only the first."`
}

type scheduleIDCmd struct {
	apiFlags
	ID string `arg:"" name:"schedule" help:"The schedule's id."`
}

type (
	schedulesShowCmd    struct{ scheduleIDCmd }
	schedulesPauseCmd   struct{ scheduleIDCmd }
	schedulesResumeCmd  struct{ scheduleIDCmd }
	schedulesTriggerCmd struct{ scheduleIDCmd }
	schedulesDeleteCmd  struct{ scheduleIDCmd }
)

type schedulesCreateCmd struct {
	apiFlags
	ID       string `arg:"" name:"schedule" help:"The new schedule's id: 1 to 100 of a-z, 0-9, '.', '_' and '-'."`
	Workflow string `required:"" help:"The workflow whose runs it starts."`
	Cron     string `help:"A five-field cron rule (minute hour day month weekday), or @daily, @weekly, @hourly, @monthly, @yearly."`
	Every    string `help:"Fire at a fixed interval instead, such as 15m or 1h (at least 1s)."`
	Timezone string `help:"An IANA time zone such as Europe/Lisbon (default UTC)."`
	Input    string `help:"The runs' input: JSON, or @FILE (@- for standard input); an object gets scheduledAt added."`
	Overlap  string `enum:",skip,buffer_one,allow" default:"" help:"While the last run goes on: skip (the default), buffer_one or allow."`
	CatchUp  string `name:"catch-up" help:"How late a fire may still start after downtime, such as 10m (default 1m)."`
	Paused   bool   `help:"Create it paused."`
	Note     string `help:"A note for the people who read the Schedules page."`
}

func (f *schedulesListCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	return listPages(p, f.Cursor, f.All, func(cursor string) (apiclient.Page[apiclient.Schedule], error) {
		return api.ListSchedules(e.ctx, f.Workflow, cursor, f.Limit)
	}, []string{"ID", "WORKFLOW", "WHEN", "NEXT FIRE", "LAST FIRE"}, func(all []apiclient.Schedule) [][]string {
		rows := make([][]string, len(all))
		for i, sc := range all {
			next := "paused"
			if sc.NextFireAt != nil {
				next = when(*sc.NextFireAt)
			}
			last := ""
			if sc.LastFire != nil {
				last = sc.LastFire.Outcome + " " + when(sc.LastFire.At)
			}
			rows[i] = []string{sc.ID, sc.WorkflowID, sc.Description, next, last}
		}
		return rows
	})
}

func (f *schedulesShowCmd) Run(e *cmdEnv) error  { return f.show(e, (*apiclient.Client).GetSchedule) }
func (f *schedulesPauseCmd) Run(e *cmdEnv) error { return f.show(e, (*apiclient.Client).PauseSchedule) }
func (f *schedulesResumeCmd) Run(e *cmdEnv) error {
	return f.show(e, (*apiclient.Client).ResumeSchedule)
}

// show prints the schedule act answers with.
func (f *scheduleIDCmd) show(e *cmdEnv, act func(*apiclient.Client, context.Context, string) (apiclient.Schedule, error)) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	sc, err := act(api, e.ctx, f.ID)
	if err != nil {
		return err
	}
	return p.schedule(sc)
}

func (f *schedulesTriggerCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	run, err := api.TriggerSchedule(e.ctx, f.ID)
	if err != nil {
		return err
	}
	return p.run(run)
}

func (f *schedulesDeleteCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	if err := api.DeleteSchedule(e.ctx, f.ID); err != nil {
		return err
	}
	if p.json {
		return p.value(map[string]any{"id": f.ID, "deleted": true})
	}
	_, err = fmt.Fprintf(p.out, "Deleted schedule %s.\n", f.ID)
	return err
}

func (f *schedulesCreateCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	spec := apiclient.ScheduleSpec{ID: apiclient.Ptr(f.ID), WorkflowID: apiclient.Ptr(f.Workflow)}
	if f.Cron != "" {
		spec.Cron = apiclient.Ptr(f.Cron)
	}
	if f.Every != "" {
		ms, err := durationMs("--every", f.Every)
		if err != nil {
			return err
		}
		spec.EveryMs = &ms
	}
	if f.CatchUp != "" {
		ms, err := durationMs("--catch-up", f.CatchUp)
		if err != nil {
			return err
		}
		spec.CatchUpWindowMs = &ms
	}
	if f.Timezone != "" {
		spec.Timezone = apiclient.Ptr(f.Timezone)
	}
	if f.Overlap != "" {
		spec.Overlap = apiclient.Ptr(f.Overlap)
	}
	if f.Note != "" {
		spec.Note = apiclient.Ptr(f.Note)
	}
	if f.Paused {
		spec.Paused = apiclient.Ptr(true)
	}
	if f.Input != "" {
		if spec.Input, err = jsonArg("--input", f.Input, e.stdin); err != nil {
			return err
		}
	}
	sc, err := api.CreateSchedule(e.ctx, spec)
	if err != nil {
		return err
	}
	return p.schedule(sc)
}

// durationMs reads a Go duration ("15m", "1h30m") as milliseconds.
func durationMs(flag, v string) (int64, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", flag, v, err)
	}
	return d.Milliseconds(), nil
}

func (p printer) schedule(sc apiclient.Schedule) error {
	if p.json {
		return p.value(sc)
	}
	next := "none (paused)"
	if sc.NextFireAt != nil {
		next = when(*sc.NextFireAt)
	}
	var nexts, fires []string
	for _, t := range sc.NextFires {
		nexts = append(nexts, when(t))
	}
	for _, f := range sc.Fires {
		line := when(f.At) + " " + f.Outcome
		switch {
		case f.RunID != "":
			line += " (run " + f.RunID + ")"
		case f.Count > 1:
			line += " (" + strconv.Itoa(f.Count) + " fires)"
		case f.Message != "":
			line += ": " + f.Message
		}
		fires = append(fires, line)
	}
	return p.fields("Schedule", sc.ID, "Workflow", sc.WorkflowID, "When", sc.Description, "Overlap", sc.Overlap,
		"Paused", strconv.FormatBool(sc.Paused), "Next fire", next, "Next fires", strings.Join(nexts, ", "),
		"Last fires", strings.Join(fires, "; "), "Input", compact(sc.Input), "Note", sc.Note)
}
