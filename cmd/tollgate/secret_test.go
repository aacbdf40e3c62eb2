package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

const callbackDoc = `{"id": "callback", "version": "1", "steps": [{"type": "task", "name": "pay", "handler": "awaitCallback", "config": {"callSelf": "none"}}]}`

// Servers sharing a PostgreSQL database without TOLLGATE_SECRET derive the
// same tokens: the resume URL one shows for the other's waitpoint works.
func TestServersSharingADatabaseShareTheSecret(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": storagetest.NewDatabase(t)}
	a, b := startServer(t, env), startServer(t, env)
	ca, cb := a.client(), b.client()
	ca.register(t, callbackDoc)
	run := ca.startRun(t, "callback", nil)
	onA := ca.waitStatus(t, run.ID, "suspended").Suspensions[0].ResumeURL
	onB := cb.run(t, run.ID).Suspensions[0].ResumeURL
	if strings.TrimPrefix(onA, a.URL) != strings.TrimPrefix(onB, b.URL) {
		t.Errorf("the servers show different resume URLs:\n%s\n%s", onA, onB)
	}
	resp, err := http.Post(onB, "application/json", strings.NewReader(`{"paid": true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the resume URL server B shows for server A's waitpoint answers %d", resp.StatusCode)
	}
	ca.waitStatus(t, run.ID, "succeeded")
}

// A data folder that kept its secret in a file keeps it: the resume URLs
// handed out before the secret moved into the database still work.
func TestDataFolderSecretIsKept(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	old := "a secret kept in the data folder, 32+ characters"
	if err := os.WriteFile(filepath.Join(data, "secret"), []byte(old+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the second start reads it from the database
		s := startServer(t, nil, "--data", data)
		c := s.client()
		if i == 0 {
			c.register(t, callbackDoc)
		}
		run := c.startRun(t, "callback", nil)
		got := c.waitStatus(t, run.ID, "suspended").Suspensions[0].ResumeURL
		// …/v1/flow-runs/{run}/waitpoints/{id}?token=…
		parts := strings.Split(strings.SplitN(strings.TrimPrefix(got, s.URL), "?", 2)[0], "/")
		wp := &flow.Waitpoints{Links: &flow.Links{Secret: []byte(old), PublicURL: s.URL}}
		if want := wp.ResumeURL(run.ID, parts[len(parts)-1]); got != want {
			t.Errorf("resume URL %s, want the data folder's secret's %s", got, want)
		}
		if err := s.stop(); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(data, "secret"))
	}
}
