package main

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"strconv"

	apiclient "github.com/tollgatehq/tollgate/client"
)

// The suspensions and signal commands, each run by kong (Run).

func (f *suspListCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	filter := apiclient.SuspensionFilter{Status: f.Status, Reason: f.Reason, Kind: f.Kind, WorkflowID: f.Workflow, RunID: f.RunID,
		Newest: f.Newest, Limit: f.Limit}
	return listPages(p, f.Cursor, f.All, func(cursor string) (apiclient.Page[apiclient.Suspension], error) {
		filter.Cursor = cursor
		return api.ListSuspensions(e.ctx, filter)
	}, []string{"ID", "RUN", "WORKFLOW", "KIND", "STATUS", "WHAT", "SINCE"}, func(all []apiclient.Suspension) [][]string {
		rows := make([][]string, len(all))
		for i, sp := range all {
			rows[i] = []string{sp.ID, sp.RunID, sp.WorkflowID, sp.Kind, sp.Status, cmp.Or(sp.Title, sp.ReasonLabel, sp.Reason), when(sp.SuspendedAt)}
		}
		return rows
	})
}

func (f *suspGetCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	sp, err := api.GetSuspension(e.ctx, f.ID)
	if err != nil {
		return err
	}
	return p.suspension(sp)
}

func (f *suspResumeCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	data, err := jsonArg("--data", f.Data, e.stdin)
	if err != nil {
		return err
	}
	resume := api.Resume
	if f.ConfirmMachineWait {
		resume = api.ResumeMachineWait
	}
	sp, err := resume(e.ctx, f.ID, data)
	if err != nil {
		return err
	}
	return p.suspension(sp)
}

func (f *suspBulkCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	if err := f.checkBroad(e.ctx, api, e.stdin); err != nil {
		return err
	}
	b := apiclient.SuspensionBulk{Action: f.Action, Comment: f.Comment, IDs: splitList(f.IDs)}
	if len(b.IDs) == 0 {
		b.Filter = &apiclient.SuspensionSelection{Status: f.Status, Reason: f.Reason, Kind: f.Kind, WorkflowID: f.Workflow, RunID: f.RunID}
	}
	return p.bulk(api.BulkSuspensions(e.ctx, b, p.bulkLine))
}

func (f *suspUploadCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	files := make([]apiclient.File, len(f.Files))
	for i, name := range f.Files {
		fh, err := os.Open(name)
		if err != nil {
			return err
		}
		defer fh.Close()
		files[i] = apiclient.File{Name: filepath.Base(name), Content: fh}
	}
	up, err := api.UploadDocuments(e.ctx, f.ID, files...)
	if err != nil {
		return err
	}
	if p.json {
		return p.value(up)
	}
	rows := make([][]string, len(up.Documents))
	for i, d := range up.Documents {
		rows[i] = []string{d.ID, d.Filename, d.ContentType, strconv.FormatInt(d.Size, 10)}
	}
	return p.table([]string{"DOCUMENT", "FILE", "TYPE", "BYTES"}, rows)
}

func (f *suspApproveCmd) Run(e *cmdEnv) error { return f.decide(e, (*apiclient.Client).Approve) }
func (f *suspRejectCmd) Run(e *cmdEnv) error  { return f.decide(e, (*apiclient.Client).Reject) }

// decide approves or rejects the suspension, with the comment given.
func (f *suspDecideCmd) decide(e *cmdEnv, act func(*apiclient.Client, context.Context, string, string) (apiclient.Suspension, error)) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	sp, err := act(api, e.ctx, f.ID, f.Comment)
	if err != nil {
		return err
	}
	return p.suspension(sp)
}

func (f *signalSendCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	req := apiclient.SignalRequest{Name: f.Name, SignalID: f.ID, StepID: f.Step}
	if f.Payload != "" {
		if req.Payload, err = jsonArg("--payload", f.Payload, e.stdin); err != nil {
			return err
		}
	}
	sig, err := api.Signal(e.ctx, f.RunID, req)
	if err != nil {
		return err
	}
	if p.json {
		return p.value(sig)
	}
	return p.fields("Signal", sig.Name, "Id", sig.SignalID, "Run", sig.RunID, "Status", sig.Status, "Duplicate", strconv.FormatBool(sig.Duplicate))
}
