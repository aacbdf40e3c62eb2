package storage_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// A pause's row inserted by its hot statement holds what bun would
// write, and the rows a pipelined transaction reads through prepared statements (a
// run locked by a resume or a step's commit, the suspension a resume
// decides) are the rows bun reads: every column, NULL or set, JSON, times
// and lists alike, as the rest of the store expects them.
func TestPipedReadsMatchBun(t *testing.T) {
	t.Parallel()
	db := openDB(t, dialectOpts(t, storage.Postgres))
	ctx := t.Context()
	wf := askOnce("piped", func(domain.StepRequest) domain.Command {
		return domain.Review("sign", map[string]any{"amount": 12.5, "note": "é ' ?"},
			domain.WithApprovers(domain.RoleReviewer, "ann@example.com"), domain.WithAssignee("cy@example.com"),
			domain.WithPolicy(domain.ApprovalPolicy{Quorum: 2, SeparationOfDuties: true, RejectRequiresComment: true}),
			domain.WithDocuments("application/pdf"), domain.WithTitle("Sign the lease", "Read it first"),
			domain.WithPresentation(domain.Presentation{ReasonLabel: "Signature", Fields: []domain.Field{{Label: "Amount", Value: json.RawMessage(`"12.50"`)}}}),
			domain.WithResumeSchema(json.RawMessage(`{"type":"object"}`)))
	})
	e := startEngine(t, db, newRegistry(t, wf), engine.Opts{})
	run := startRun(t, e, "piped", map[string]any{"who": "rita"})
	if got := waitRun(t, db, run.ID, domain.RunSuspended, domain.RunFailed); got.Status != domain.RunSuspended {
		t.Fatalf("run %s: %+v", got.Status, got.Error)
	}
	check := func(when string) {
		t.Helper()
		piped, viaBun, err := db.ReadPiped(ctx, run.ID)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		for i := range piped {
			if !reflect.DeepEqual(piped[i], viaBun[i]) {
				t.Errorf("%s: read piped\n %+v\nread by bun\n %+v", when, piped[i], viaBun[i])
			}
		}
		// A look at the run reads it, its suspensions and their votes in
		// one message; the list reads them by bun.
		got, ss, err := db.RunWithSuspensions(ctx, run.ID)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		listed, _, err := db.Suspensions(ctx, domain.SuspensionFilter{RunID: run.ID})
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := db.Run(ctx, run.ID); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(ss, listed) {
			t.Errorf("%s: the run's page reads\n %+v\n %+v\nthe list reads\n %+v\n %+v", when, got, ss, want, listed)
		}
	}
	check("suspended")
	s := pendingSuspension(t, db, run.ID)
	if !slices.Equal(s.Approvers, []string{"ann@example.com"}) || s.ApproverRole != domain.RoleReviewer || s.Assignee != "cy@example.com" ||
		s.Policy.Quorum != 2 || !s.Policy.SeparationOfDuties || !slices.Equal(s.Accept, []string{"application/pdf"}) ||
		s.Title != "Sign the lease" || s.Instructions != "Read it first" || s.ReasonLabel != "Signature" || len(s.Fields) != 1 ||
		!domain.SameJSON(s.ResumeSchema, json.RawMessage(`{"type":"object"}`)) ||
		!domain.SameJSON(s.Checkpoint, raw(map[string]any{"amount": 12.5, "note": "é ' ?"})) || s.WakeAt != nil || s.SuspendedAt.IsZero() {
		t.Errorf("the pause as stored: %+v", s)
	}
	// The pause was inserted by a hot statement: it holds what bun
	// would have written.
	stored, viaBun, err := db.PauseRowsAlike(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stored, viaBun) {
		t.Errorf("the pause as inserted\n %v\nas bun inserts it\n %v", stored, viaBun)
	}
	admin := domain.User{Email: "admin@example.com", Role: domain.RoleAdmin}
	if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Decision: domain.DecisionApproved, Data: raw(map[string]string{"comment": "fine"}),
		By: admin.Email, Actor: &admin, RequestKey: "k-1", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	check("voted")
}

// A prepared statement whose table a migration changed is refused by
// PostgreSQL once ("cached plan must not change result type"); the
// connection forgets it, and the next message prepares it again, so a
// server that shares its database with one that migrated recovers
// without a restart.
func TestPipedStatementsSurviveAMigration(t *testing.T) {
	t.Parallel()
	db := openDB(t, dialectOpts(t, storage.Postgres))
	run, _, err := db.CreateRun(t.Context(), domain.NewRun{ID: newID(), WorkflowID: "migrated", WorkflowVersion: "1", Input: raw(nil), FirstStep: "work", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	first, second, err := db.ReadRunAcrossDDL(t.Context(), run.ID, "ALTER TABLE runs ALTER COLUMN workflow_version TYPE varchar(200)")
	if err != nil {
		t.Fatal(err)
	}
	if first == nil {
		t.Log("PostgreSQL ran the stale statement without complaint")
	}
	if second != nil {
		t.Fatalf("the read after the statement went stale: %v; want it prepared anew", second)
	}
}

// A batch's pauses go in by one statement over arrays, each column a text
// cast to its type: every row holds what bun would write, NULLs, JSON,
// lists and times alike. The batch commits whole (a failed statement
// would leave its transitions to be applied one by one, by bun).
func TestSetPausesMatchBun(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	opts := dialectOpts(t, storage.Postgres)
	opts.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db := openDB(t, opts)
	ctx, at := t.Context(), time.Now().UTC()
	for range 3 {
		if _, _, err := db.CreateRun(ctx, domain.NewRun{ID: newID(), WorkflowID: "paused", WorkflowVersion: "1", Input: raw(nil), FirstStep: "work", Now: at.Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := db.ClaimJobs(ctx, "w", at, time.Hour, 3)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("claim = %d jobs, %v", len(jobs), err)
	}
	wake, deadline := at.Add(time.Hour), at.Add(48*time.Hour)
	pauses := []*domain.NewSuspension{
		{Kind: domain.KindApproval, Reason: "approval", Checkpoint: raw(map[string]any{"amount": 12.5, "note": "é ' ? {a,b} \"q\""}),
			ResumeStep: "after", ResumeSchema: json.RawMessage(`{"type":"object"}`), Assignee: "cy@example.com", RunStartedBy: "u-1",
			Approvers: []string{"ann@example.com", "bo,b@example.com"}, ApproverRole: domain.RoleReviewer,
			Policy: domain.ApprovalPolicy{Quorum: 2, SeparationOfDuties: true}, Requesters: []string{"rita@example.com"},
			Accept: []string{"application/pdf"}, Title: "Sign the lease", Fields: []domain.Field{{Label: "Amount", Value: json.RawMessage(`"12.50"`)}},
			ReasonLabel: "Signature", Instructions: "Read it first\nthen sign", WakeAt: &deadline},
		{Kind: domain.KindDelay, Reason: "delay", Checkpoint: json.RawMessage(`null`), ResumeStep: "after", WakeAt: &wake},
		{Kind: domain.KindWebhook, Reason: "", ResumeStep: "after", StepKey: "hook"},
	}
	var batch []domain.Transition
	for i, j := range jobs {
		ns := pauses[i]
		ns.ID, ns.WorkflowID, ns.WorkflowVersion, ns.StepName = newID(), "paused", "1", j.Step
		batch = append(batch, domain.Transition{Step: &domain.StepCommit{Job: j.Ref(), RunID: j.RunID, Step: j.Step, Now: at, Suspension: ns}})
	}
	for i, a := range db.Apply(ctx, batch) {
		if a.Err != nil || a.Commit.Status != domain.RunSuspended {
			t.Fatalf("commit %d: %+v", i, a)
		}
		stored, viaBun, err := db.PauseRowsAlike(ctx, pauses[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(stored, viaBun) {
			t.Errorf("pause %d as inserted\n %v\nas bun inserts it\n %v", i, stored, viaBun)
		}
	}
	if log.Len() > 0 {
		t.Errorf("the batch did not commit whole:\n%s", &log)
	}
}

// On SQLite a step's pause, its timer, its mail intent, the decision's
// audit entry and the job it queues are written by statements prepared
// once: each row holds what bun would write.
func TestSQLitePreparedInsertsMatchBun(t *testing.T) {
	t.Parallel()
	db := openDB(t, dialectOpts(t, storage.SQLite))
	ctx, at := t.Context(), time.Now().UTC()
	run, _, err := db.CreateRun(ctx, domain.NewRun{ID: newID(), WorkflowID: "prepared", WorkflowVersion: "1", Input: raw(nil), FirstStep: "work", Now: at.Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := db.ClaimJobs(ctx, "w", at, time.Hour, 1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim = %d jobs, %v", len(jobs), err)
	}
	deadline := at.Add(48 * time.Hour)
	ns := &domain.NewSuspension{ID: newID(), WorkflowID: "prepared", WorkflowVersion: "1", StepName: "work", Kind: domain.KindApproval, Reason: "approval",
		Checkpoint: raw(map[string]any{"amount": 12.5, "note": "é ' ?"}), ResumeStep: "after", ResumeSchema: json.RawMessage(`{"type":"object"}`),
		Assignee: "cy@example.com", RunStartedBy: "u-1", Approvers: []string{"ann@example.com"}, ApproverRole: domain.RoleReviewer,
		Policy: domain.ApprovalPolicy{SeparationOfDuties: true}, Accept: []string{"application/pdf"}, Title: "Sign the lease",
		Fields: []domain.Field{{Label: "Amount", Value: json.RawMessage(`"12.50"`)}}, Instructions: "Read it first", WakeAt: &deadline}
	j := jobs[0]
	if a := db.Apply(ctx, []domain.Transition{{Step: &domain.StepCommit{Job: j.Ref(), RunID: j.RunID, Step: j.Step, Now: at, Suspension: ns}}})[0]; a.Err != nil {
		t.Fatal(a.Err)
	}
	ann := domain.User{ID: "u-ann", Email: "ann@example.com", Role: domain.RoleReviewer}
	if a := db.Apply(ctx, []domain.Transition{{Resume: &domain.ResumeRequest{SuspensionID: ns.ID, Decision: domain.DecisionApproved, By: ann.Email, Actor: &ann, Now: at,
		Audit: &domain.AuditEntry{At: at, ActorID: ann.ID, ActorEmail: ann.Email, Action: "suspension.decide", Data: raw(map[string]string{"decision": "approved"})}}}})[0]; a.Err != nil {
		t.Fatal(a.Err)
	}
	stored, viaBun, err := db.SQLiteRowsAlike(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range stored {
		if !reflect.DeepEqual(stored[i], viaBun[i]) {
			t.Errorf("row %d as inserted\n %v\nas bun inserts it\n %v", i, stored[i], viaBun[i])
		}
	}
}
