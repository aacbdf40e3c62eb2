package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	apiclient "github.com/tollgatehq/tollgate/client"
)

// The runs commands, each run by kong (Run) with the command's
// environment.

func (f *runsListCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	filter := f.filter()
	filter.Limit = f.Limit
	return listPages(p, f.Cursor, f.All, func(cursor string) (apiclient.Page[apiclient.Run], error) {
		filter.Cursor = cursor
		return api.ListRuns(e.ctx, filter)
	}, runHeader, runRows)
}

func (f *runsGetCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	run, err := api.GetRun(e.ctx, f.ID)
	if err != nil {
		return err
	}
	return p.run(run)
}

func (f *runsStartCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	input, err := jsonArg("--input", f.Input, e.stdin)
	if err != nil {
		return err
	}
	var opts []apiclient.RequestOption
	if f.IdempotencyKey != "" {
		opts = append(opts, apiclient.IdempotencyKey(f.IdempotencyKey))
	}
	run, err := api.StartRun(e.ctx, f.Workflow, input, opts...)
	if err != nil {
		return err
	}
	if f.Wait {
		if run, err = api.Wait(e.ctx, run.ID, apiclient.RunSuspended, apiclient.RunSucceeded, apiclient.RunFailed, apiclient.RunCancelled); err != nil {
			return err
		}
	}
	return p.run(run)
}

func (f *runsEventsCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	var all []apiclient.Event
	for ev, err := range apiclient.Each(func(cursor string) (apiclient.Page[apiclient.Event], error) {
		return api.Events(e.ctx, f.ID, cursor, 500)
	}) {
		if err != nil {
			return err
		}
		all = append(all, ev)
	}
	if p.json {
		return p.value(orEmpty(all))
	}
	rows := make([][]string, len(all))
	for i, ev := range all {
		rows[i] = []string{strconv.FormatInt(ev.Seq, 10), when(ev.CreatedAt), ev.Type, ev.Step, compact(ev.Payload)}
	}
	return p.table([]string{"SEQ", "AT", "TYPE", "STEP", "PAYLOAD"}, rows)
}

func (f *runsAttachCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	_, err = api.Attach(e.ctx, f.ID, "", func(ev apiclient.StreamEvent) bool {
		if p.json {
			_ = json.NewEncoder(p.out).Encode(map[string]any{"type": ev.Type, "id": ev.ID, "data": ev.Data})
			return true
		}
		fmt.Fprintf(p.out, "%-4s %-22s %s\n", ev.ID, ev.Type, compact(ev.Data))
		return true
	})
	return err
}

func (f *runsWaitCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	run, err := api.Wait(e.ctx, f.ID, splitList(f.Status)...)
	if err != nil {
		return err
	}
	return p.run(run)
}

func (f *runsCancelCmd) Run(e *cmdEnv) error { return f.act(e, (*apiclient.Client).CancelRun) }
func (f *runsRetryCmd) Run(e *cmdEnv) error  { return f.act(e, (*apiclient.Client).RetryRun) }

// act cancels or retries the run, with the reason given.
func (f *runReasonCmd) act(e *cmdEnv, act func(*apiclient.Client, context.Context, string, string) (apiclient.Run, error)) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	run, err := act(api, e.ctx, f.ID, f.Reason)
	if err != nil {
		return err
	}
	return p.run(run)
}

func (f *runsRerunCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	var input any
	if f.Input != "" {
		if input, err = jsonArg("--input", f.Input, e.stdin); err != nil {
			return err
		}
	}
	run, err := api.RerunRun(e.ctx, f.ID, input)
	if err != nil {
		return err
	}
	return p.run(run)
}

func (f *runsBulkCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	b := apiclient.RunBulk{Action: f.Action, Reason: f.Reason, IDs: splitList(f.IDs)}
	if len(b.IDs) == 0 {
		b.Filter = new(f.filter())
	}
	return p.bulk(api.BulkRuns(e.ctx, b, p.bulkLine))
}

func (f *runsDeleteCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	if err := api.DeleteRun(e.ctx, f.ID, f.Reason); err != nil {
		return err
	}
	if p.json {
		return p.value(map[string]any{"id": f.ID, "deleted": true})
	}
	_, err = fmt.Fprintf(p.out, "Deleted run %s.\n", f.ID)
	return err
}
