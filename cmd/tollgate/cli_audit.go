package main

import (
	"encoding/json"
	"time"

	apiclient "github.com/tollgatehq/tollgate/client"
)

type auditCLI struct {
	List   auditListCmd   `cmd:"" help:"List the audit log, newest first (admins' keys)."`
	Export auditExportCmd `cmd:"" help:"Print every entry the filters match, newest first, one JSON object a line (admins' keys)."`
}

// auditFilterFlags select audit entries, for audit list and export.
type auditFilterFlags struct {
	Actor    string    `help:"Only entries of the person with this email."`
	Category string    `help:"Only this kind of entry: decisions, runs, schedules, people, workflows or security."`
	Action   string    `help:"Only this action, such as suspension.approve."`
	Workflow string    `help:"Only entries about this workflow."`
	From     time.Time `help:"Only entries at or after this time (RFC 3339)." format:"2006-01-02T15:04:05Z07:00"`
	To       time.Time `help:"Only entries before this time (RFC 3339)." format:"2006-01-02T15:04:05Z07:00"`
}

func (f auditFilterFlags) filter() apiclient.AuditFilter {
	return apiclient.AuditFilter{ActorEmail: f.Actor, Category: f.Category, Action: f.Action, WorkflowID: f.Workflow, From: f.From, To: f.To}
}

type auditListCmd struct {
	apiFlags
	auditFilterFlags
	Limit  int    `default:"50" help:"Entries per page (1-500)."`
	Cursor string `help:"The page after the one that handed out this cursor."`
	All    bool   `help:"Every page, not only the first."`
}

type auditExportCmd struct {
	apiFlags
	auditFilterFlags
}

// Run prints the entries as JSON lines whichever the output: an export is
// for programs.
func (f *auditExportCmd) Run(e *cmdEnv) error {
	api, _, err := f.connect(e)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(e.stdout)
	for entry, err := range api.ExportAudit(e.ctx, f.filter()) {
		if err != nil {
			return err
		}
		if err := enc.Encode(entry); err != nil {
			return err
		}
	}
	return nil
}

func (f *auditListCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	filter := f.filter()
	filter.Limit = f.Limit
	return listPages(p, f.Cursor, f.All, func(cursor string) (apiclient.Page[apiclient.AuditEntry], error) {
		filter.Cursor = cursor
		return api.ListAudit(e.ctx, filter)
	}, []string{"AT", "WHO", "ACTION", "SUBJECT", "WORKFLOW"}, func(all []apiclient.AuditEntry) [][]string {
		rows := make([][]string, len(all))
		for i, e := range all {
			rows[i] = []string{when(e.At), e.ActorEmail, e.Action, e.Subject, e.WorkflowID}
		}
		return rows
	})
}
