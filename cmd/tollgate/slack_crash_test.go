package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/storage/storagetest"
	"github.com/tollgatehq/tollgate/web/slacktest"
)

// A server killed with SIGKILL while it posts a request to Slack (the
// fake holds the post unanswered, after keeping the message) posts
// nothing twice after the restart: the next attempt finds the message by
// the id it carries and writes it again, and a further restart adds
// nothing. The message is queued with the request's commit, so none is
// lost either.
func TestSlackCrashWhilePostingSQLite(t *testing.T) { slackCrashTest(t, nil) }

func TestSlackCrashWhilePostingPostgres(t *testing.T) {
	slackCrashTest(t, map[string]string{"DATABASE_URL": storagetest.NewDatabase(t)})
}

func slackCrashTest(t *testing.T, extraEnv map[string]string) {
	t.Parallel()
	fake := slacktest.New(t, map[string]string{"URITA": "rita@example.com"})
	fake.Hold()
	dir := t.TempDir()
	doc := `{"id": "slack-payout", "version": "1", "slack": "#approvals",
		"steps": [{"type": "approval", "name": "sign-off", "title": "Payout to Northwind"}]}`
	if err := os.WriteFile(filepath.Join(dir, "slack-payout.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TOLLGATE_SLACK_BOT_TOKEN": slacktest.Token, "TOLLGATE_SLACK_SIGNING_SECRET": "a signing secret of the fake app",
		"TOLLGATE_SLACK_API_URL": fake.URL + "/api/", "TOLLGATE_WORKFLOWS": dir, "TOLLGATE_JOB_LEASE": "3s",
		"TOLLGATE_ADMIN_EMAIL": "boss@example.com", "TOLLGATE_PUBLIC_URL": "https://tollgate.example.com"}
	for k, v := range extraEnv {
		env[k] = v
	}
	h := newCrashHarness(t, env)
	p, err := h.startReady()
	if err != nil {
		t.Fatal(err)
	}
	run := h.client(1).startRun(t, "slack-payout", map[string]string{})
	select {
	case <-fake.Holding():
	case <-time.After(30 * time.Second):
		t.Fatalf("nothing was being posted within 30s\n%s", tail(p.stderr, 20))
	}
	h.kill(p)
	fake.Release()

	if p, err = h.startReady(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		posts, updates, _, _ := fake.Snapshot()
		if len(updates) > 0 {
			if len(posts) != 1 || updates[0].TS != posts[0].TS || !strings.Contains(string(updates[0].Blocks), "tollgate_approve") {
				t.Fatalf("after the restart: %d posts, update %+v", len(posts), updates[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s's message was not found again within 45s (%d posts)\n%s", run.ID, len(posts), tail(p.stderr, 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.stopGracefully(p)
	if p, err = h.startReady(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	h.stopGracefully(p)
	if posts, _, _, _ := fake.Snapshot(); len(posts) != 1 {
		t.Fatalf("%d posts for run %s, want exactly 1", len(posts), run.ID)
	}
}
