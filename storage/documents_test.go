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

func docsWorkflow(types ...string) *domain.Workflow {
	return domain.NewWorkflow("docs-"+types[0][:3], "1").
		Step("ask", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("need_docs", map[string]int{"n": 1}, "use", domain.WithDocuments(types...))}}, nil
		}).
		Step("use", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{}, nil
		})
}

// stage adds a staged document with the given content to a suspension.
func stage(t *testing.T, db *storage.DB, s domain.Suspension, id string, content []byte, at time.Time) domain.Document {
	t.Helper()
	d, err := db.AddDocument(t.Context(), domain.Document{ID: id, SuspensionID: s.ID, RunID: s.RunID, UploaderID: "u-1", UploaderEmail: "f@example.com",
		Filename: "claim.pdf", ContentType: "application/pdf", CreatedAt: at}, bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDocumentsAndAcceptedTypes(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		e := startEngine(t, db, newRegistry(t, docsWorkflow("application/pdf", "image/png"), docsWorkflow("not a type")), engine.Opts{})

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
	})
}

// An upload is written in chunks and stays invisible — not listed, not
// served, not nameable — until the resume that uses it completes it; one
// that never completes is swept.
func TestStagedDocuments(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		e := startEngine(t, db, newRegistry(t, docsWorkflow("application/pdf")), engine.Opts{})
		run := startRun(t, e, "docs-app", nil)
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)

		big := bytes.Repeat([]byte("%PDF-1.7 0123456789abcdef"), 3*domain.DocumentChunkSize/25+7)
		now := time.Now()
		d1 := stage(t, db, s, s.ID+"-d1", big, now)
		d2 := stage(t, db, s, s.ID+"-d2", []byte("%PDF-1.7 two"), now.Add(time.Second))
		if sum := sha256.Sum256(big); d1.Size != int64(len(big)) || !bytes.Equal(d1.SHA256, sum[:]) {
			t.Fatalf("staged document: size %d, sha256 %x; want %d, %x", d1.Size, d1.SHA256, len(big), sum)
		}
		if n := count(t, db, "SELECT count(*) FROM document_chunks WHERE document_id = ?", d1.ID); n != 4 {
			t.Fatalf("%d chunks of a document of %d bytes; want 4", n, len(big))
		}
		if n := count(t, db, "SELECT count(*) FROM document_chunks WHERE length(data) > ?", domain.DocumentChunkSize); n != 0 {
			t.Fatalf("%d chunks larger than %d bytes", n, domain.DocumentChunkSize)
		}
		assertHidden := func(when string, ids ...string) {
			t.Helper()
			for _, id := range ids {
				if _, err := db.Document(ctx, id); !errors.Is(err, domain.ErrNotFound) {
					t.Errorf("%s: document %s served: %v", when, id, err)
				}
				if _, err := db.CopyDocument(ctx, id, &bytes.Buffer{}); !errors.Is(err, domain.ErrNotFound) {
					t.Errorf("%s: content of %s served: %v", when, id, err)
				}
			}
		}
		assertHidden("staged", d1.ID, d2.ID)
		if list, err := db.Documents(ctx, s.ID); err != nil || len(list) != 0 {
			t.Fatalf("staged documents listed: %+v, %v", list, err)
		}
		// A staged document cannot be named, even by the resume's own data
		// unless that resume completes it.
		_, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]any{"documentIds": []string{d1.ID}}), By: "f"})
		if ve, ok := errors.AsType[*domain.ValidationError](err); !ok || ve.Code != domain.CodeUnknownDocument || len(ve.Fields) != 1 || ve.Fields[0].Field != "/resumeData/documentIds/0" {
			t.Fatalf("resume naming a staged document: %v", err)
		}

		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]any{"documentIds": []string{d1.ID}}), By: "f", Documents: []string{d1.ID}}); err != nil {
			t.Fatal(err)
		}
		list, err := db.Documents(ctx, s.ID)
		if err != nil || len(list) != 1 || list[0].ID != d1.ID || list[0].Size != int64(len(big)) {
			t.Fatalf("documents after the resume = %+v, %v", list, err)
		}
		var out bytes.Buffer
		if n, err := db.CopyDocument(ctx, d1.ID, &out); err != nil || n != int64(len(big)) || !bytes.Equal(out.Bytes(), big) {
			t.Fatalf("copied %d bytes, equal %v, %v", n, bytes.Equal(out.Bytes(), big), err)
		}
		if got, err := db.UploadedDocuments(ctx, s.ID, []string{d1.ID, d2.ID, "made-up"}); err != nil || len(got) != 1 || got[0] != d1.ID {
			t.Fatalf("uploaded documents = %v, %v", got, err)
		}

		// Uploads left staged are swept once older than the bound.
		old := stage(t, db, s, s.ID+"-old", []byte("%PDF-1.7 old"), now.Add(-2*time.Hour))
		if n, err := db.DeleteStagedDocuments(ctx, now.Add(-time.Hour), 100); err != nil || n != 1 {
			t.Fatalf("swept %d, %v; want the one staged two hours ago", n, err)
		}
		assertHidden("swept", old.ID)
		if n := count(t, db, "SELECT count(*) FROM documents WHERE id = ?", old.ID) + count(t, db, "SELECT count(*) FROM document_chunks WHERE document_id = ?", old.ID); n != 0 {
			t.Fatalf("%d rows of a swept document left", n)
		}
		if n, err := db.DeleteStagedDocuments(ctx, now.Add(time.Minute), 100); err != nil || n != 1 {
			t.Fatalf("swept %d, %v; want only the staged d2", n, err)
		}
		if list, _ := db.Documents(ctx, s.ID); len(list) != 1 {
			t.Fatalf("a sweep removed a completed document: %+v", list)
		}
		if err := db.DeleteDocuments(ctx, []string{d1.ID}); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, "SELECT count(*) FROM document_chunks WHERE document_id = ?", d1.ID); n != 0 {
			t.Fatalf("%d chunks of a deleted document left", n)
		}
	})
}

// Resume data may name only documents uploaded to the suspension it
// resumes; anything else is refused and changes nothing.
func TestResumeNamesOnlyUploadedDocuments(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		e := startEngine(t, db, newRegistry(t, docsWorkflow("application/pdf")), engine.Opts{})
		first, other := startRun(t, e, "docs-app", nil), startRun(t, e, "docs-app", nil)
		waitRun(t, db, first.ID, domain.RunSuspended)
		waitRun(t, db, other.ID, domain.RunSuspended)
		s, o := pendingSuspension(t, db, first.ID), pendingSuspension(t, db, other.ID)
		elsewhere := stage(t, db, o, o.ID+"-d", []byte("%PDF-1.7 elsewhere"), time.Now())
		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: o.ID, Data: raw(map[string]any{"documentIds": []string{elsewhere.ID}}), By: "f", Documents: []string{elsewhere.ID}}); err != nil {
			t.Fatal(err)
		}
		mine := stage(t, db, s, s.ID+"-d", []byte("%PDF-1.7 mine"), time.Now())

		for name, req := range map[string]domain.ResumeRequest{
			"made up":               {SuspensionID: s.ID, Data: raw(map[string]any{"documentIds": []string{"made-up"}})},
			"another's document":    {SuspensionID: s.ID, Data: raw(map[string]any{"documentIds": []string{elsewhere.ID}})},
			"not a list":            {SuspensionID: s.ID, Data: raw(map[string]any{"documentIds": "made-up"})},
			"not a string":          {SuspensionID: s.ID, Data: raw(map[string]any{"documentIds": []any{7}})},
			"by step key":           {RunID: first.ID, StepKey: "ask", Data: raw(map[string]any{"documentIds": []string{mine.ID}})},
			"completing another's":  {SuspensionID: s.ID, Data: raw(map[string]any{"documentIds": []string{elsewhere.ID}}), Documents: []string{elsewhere.ID}},
			"completing a made one": {SuspensionID: s.ID, Data: raw(map[string]any{"note": "x"}), Documents: []string{"made-up"}},
		} {
			req.By = "f"
			_, err := e.Resume(ctx, req)
			if ve, ok := errors.AsType[*domain.ValidationError](err); !ok || ve.Code != domain.CodeUnknownDocument {
				t.Errorf("%s: resume = %v; want %s", name, err, domain.CodeUnknownDocument)
			}
		}
		if got := pendingSuspension(t, db, first.ID); got.ID != s.ID {
			t.Fatalf("pending suspension %s; want %s still pending", got.ID, s.ID)
		}
		if list, _ := db.Documents(ctx, s.ID); len(list) != 0 {
			t.Fatalf("a refused resume completed documents: %+v", list)
		}
		// Data without documentIds is not this rule's business.
		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]any{"note": "none"}), By: "f"}); err != nil {
			t.Fatal(err)
		}
	})
}
