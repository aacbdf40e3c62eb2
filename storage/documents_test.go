package storage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

func TestDocumentsAndAcceptedTypes(t *testing.T) {
	t.Parallel()
	wf := func(types ...string) *domain.Workflow {
		return domain.NewWorkflow("docs-"+types[0][:3], "1").
			Step("ask", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Suspend("need_docs", map[string]int{"n": 1}, "use", domain.WithDocuments(types...))}}, nil
			}).
			Step("use", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{}, nil
			})
	}
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		e := startEngine(t, db, newRegistry(t, wf("application/pdf", "image/png"), wf("not a type")), engine.Opts{})

		bad := startRun(t, e, "docs-not", nil)
		if got := waitRun(t, db, bad.ID, domain.RunFailed); got.Error == nil || got.Error.Code != domain.CodeOrchestration {
			t.Fatalf("a suspension accepting %q: run error %+v; want an orchestration error", "not a type", got.Error)
		}

		run := startRun(t, e, "docs-app", nil)
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)
		if len(s.Accept) != 2 || s.Accept[0] != "application/pdf" || s.Accept[1] != "image/png" {
			t.Fatalf("accepted types = %v", s.Accept)
		}

		content := [][]byte{[]byte("%PDF-1.7 one"), []byte("%PDF-1.7 two")}
		var docs []domain.Document
		for i, c := range content {
			sum := sha256.Sum256(c)
			docs = append(docs, domain.Document{ID: s.ID + "-d" + string(rune('0'+i)), SuspensionID: s.ID, RunID: run.ID, UploaderID: "u-1", UploaderEmail: "f@example.com",
				Filename: "claim.pdf", ContentType: "application/pdf", Size: int64(len(c)), SHA256: sum[:], CreatedAt: time.Now().Add(time.Duration(i) * time.Second)})
		}
		if err := db.AddDocuments(ctx, docs, content); err != nil {
			t.Fatal(err)
		}
		list, err := db.Documents(ctx, s.ID)
		if err != nil || len(list) != 2 || list[0].ID != docs[0].ID || list[1].Size != int64(len(content[1])) {
			t.Fatalf("documents = %+v, %v", list, err)
		}
		d, data, err := db.Document(ctx, docs[1].ID)
		if err != nil || !bytes.Equal(data, content[1]) || d.ContentType != "application/pdf" || !bytes.Equal(d.SHA256, docs[1].SHA256) {
			t.Fatalf("document = %+v %q %v", d, data, err)
		}
		// All or none: a duplicate id rolls back the whole upload.
		if err := db.AddDocuments(ctx, []domain.Document{{ID: "new", SuspensionID: s.ID, RunID: run.ID, CreatedAt: time.Now()}, docs[0]}, [][]byte{{1}, {2}}); err == nil {
			t.Fatal("a duplicate document id was accepted")
		}
		if _, _, err := db.Document(ctx, "new"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("half of a failed upload was kept: %v", err)
		}
		if err := db.DeleteDocuments(ctx, []string{docs[0].ID}); err != nil {
			t.Fatal(err)
		}
		if list, _ := db.Documents(ctx, s.ID); len(list) != 1 {
			t.Fatalf("%d documents after deleting one of two", len(list))
		}
	})
}
