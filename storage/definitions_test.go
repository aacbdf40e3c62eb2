package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/storage"
)

// pauseDoc is a document of one wait of ms milliseconds; head is spliced
// in before its steps (an id or name, a description).
func pauseDoc(head string, ms int) string {
	return fmt.Sprintf(`{%s, "version": "1", "steps": [{"type": "wait", "name": "pause", "durationMs": %d}]}`, head, ms)
}

// Supersede replaces a stored document only when it is one of the former
// texts given, registered by the same registrant, and runs the same steps;
// the version keeps its registration time. Anything else stays as stored.
func TestSupersedeReplacesOnlyAFormerTextWithTheSameSteps(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		at := time.Now().Add(-time.Hour)
		clock := func() time.Time { return at }
		catalog := flow.NewCatalog(db, flow.Env{Now: clock}, domain.NewRegistry())
		register := func(text, by string) flow.Definition {
			t.Helper()
			r, err := catalog.Register(ctx, []byte(text), by)
			if err != nil || !r.Created {
				t.Fatalf("register %s: %+v %v", text, r, err)
			}
			return r.Definition
		}
		stored := func(id string) flow.Definition {
			t.Helper()
			d, err := db.Definition(ctx, id, "1")
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		supersede := func(text string, former []string, by string) bool {
			t.Helper()
			var texts [][]byte
			for _, f := range former {
				texts = append(texts, []byte(f))
			}
			ok, err := catalog.Supersede(context.WithoutCancel(ctx), []byte(text), texts, by)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}

		old := pauseDoc(`"id": "a", "description": "old words"`, 1000)
		before := register(old, "example")
		next := pauseDoc(`"name": "a"`, 1000)
		if supersede(next, []string{pauseDoc(`"id": "a"`, 1000)}, "example") {
			t.Error("replaced a document that is not one of the former texts")
		}
		if supersede(next, []string{old}, "api:ops@example.com") {
			t.Error("replaced a document another registrant stored")
		}
		if supersede(pauseDoc(`"name": "a"`, 2000), []string{old}, "example") {
			t.Error("replaced a document whose steps differ")
		}
		if got := stored("a"); string(got.Body) != string(before.Body) {
			t.Fatalf("a refused supersede changed the document: %s", got.Body)
		}
		if !supersede(next, []string{old}, "example") {
			t.Fatal("a former text with the same steps was not replaced")
		}
		want, _ := flow.Canonical([]byte(next))
		if got := stored("a"); string(got.Body) != string(want) || got.CreatedBy != "example" || !got.CreatedAt.Equal(before.CreatedAt) {
			t.Errorf("after supersede: %+v; want %s by example at %v", got, want, before.CreatedAt)
		}
		if r, err := catalog.Register(ctx, []byte(next), "api:ops@example.com"); err != nil || r.Created {
			t.Errorf("this build's text registered again: %+v %v", r, err)
		}
		if supersede(next, []string{old}, "example") {
			t.Error("replaced the same document twice")
		}
	})
}
