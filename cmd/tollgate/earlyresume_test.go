package main

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
	"github.com/tollgatehq/tollgate/web"
)

// TestEarlyResumeRacingPauseCommit resumes a pause by (run, step key) while
// the commit that creates the pause is in flight: the resume looks for the
// suspension before the commit is visible and writes after it. It must be
// accepted, as it is both before and after the commit.
func TestEarlyResumeRacingPauseCommit(t *testing.T) {
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		ctx := t.Context()
		inCommit := make(chan struct{})
		var once sync.Once
		o := storage.Opts{DataDir: t.TempDir(), URL: env["DATABASE_URL"], Fault: func(point string) error {
			if point == "commit.after_suspension" {
				once.Do(func() {
					close(inCommit)
					time.Sleep(300 * time.Millisecond)
				})
			}
			return nil
		}}
		db := storagetest.Open(t, o)
		// The pause takes a note, not documents: none can be uploaded to a
		// pause before it exists, so an early resume may name none.
		reg := domain.NewRegistry()
		note := domain.NewWorkflow("note", "1").
			Step("verifyClaim", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				schema := json.RawMessage(`{"type": "object", "required": ["note"]}`)
				return domain.StepResult{Commands: []domain.Command{domain.Suspend("awaiting_note", nil, "done", domain.WithResumeSchema(schema))}}, nil
			}).
			Step("done", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Complete(nil)}}, nil
			})
		if err := reg.Register(note); err != nil {
			t.Fatal(err)
		}
		eng := engine.New(db, reg, engine.Opts{Workers: 2, ValidateResumeData: web.ValidateResumeData})
		engCtx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { eng.Run(engCtx) })
		defer func() { stop(); wg.Wait() }()

		run, _, err := eng.Start(ctx, "note", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-inCommit:
		case <-time.After(10 * time.Second):
			t.Fatal("the pause was never committed")
		}
		_, err = eng.Resume(ctx, domain.ResumeRequest{RunID: run.ID, StepKey: "verifyClaim", Data: json.RawMessage(`{"note":"seen"}`), By: "test"})
		if ce, ok := errors.AsType[*domain.ConflictError](err); ok {
			t.Fatalf("resume by step key during the pause's commit: %s: %s", ce.Code, ce.Message)
		}
		if err != nil {
			t.Fatal(err)
		}
		waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := awaitStatus(waitCtx, storedRun(db), run.ID, string(domain.RunSucceeded), 10*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	})
}
