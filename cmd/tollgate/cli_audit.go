package main

import (
	"context"
	"io"
	"time"

	apiclient "github.com/tollgatehq/tollgate/client"
)

type auditCLI struct {
	List auditListCmd `cmd:"" help:"List the audit log, newest first (admins' keys)."`
}

type auditListCmd struct {
	apiFlags
	Actor    string    `help:"Only entries of the person with this email."`
	Category string    `help:"Only this kind of entry: decisions, runs, schedules, people, workflows or security."`
	Action   string    `help:"Only this action, such as suspension.approve."`
	Workflow string    `help:"Only entries about this workflow."`
	From     time.Time `help:"Only entries at or after this time (RFC 3339)." format:"2006-01-02T15:04:05Z07:00"`
	To       time.Time `help:"Only entries before this time (RFC 3339)." format:"2006-01-02T15:04:05Z07:00"`
	Limit    int       `default:"50" help:"Entries per page (1-500)."`
	Cursor   string    `help:"The page after the one that handed out this cursor."`
	All      bool      `help:"Every page, not only the first."`
}

func (f *auditListCmd) run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	api, err := f.api(getenv)
	if err != nil {
		return err
	}
	filter := apiclient.AuditFilter{ActorEmail: f.Actor, Category: f.Category, Action: f.Action, WorkflowID: f.Workflow, From: f.From, To: f.To, Limit: f.Limit}
	return listPages(printer{stdout, f.JSON}, f.Cursor, f.All, func(cursor string) (apiclient.Page[apiclient.AuditEntry], error) {
		filter.Cursor = cursor
		return api.ListAudit(ctx, filter)
	}, []string{"AT", "WHO", "ACTION", "SUBJECT", "WORKFLOW"}, func(all []apiclient.AuditEntry) [][]string {
		rows := make([][]string, len(all))
		for i, e := range all {
			rows[i] = []string{when(e.At), e.ActorEmail, e.Action, e.Subject, e.WorkflowID}
		}
		return rows
	})
}
