package web_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// eventually retries try until it reports true, for up to five seconds: a
// server learns of a closed connection a moment after the client closes it.
func eventually(t *testing.T, what string, try func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !try() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within 5s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// One person holds at most MaxSocketsPerUser live websockets; the next
// handshake gets 429, another person is not affected, and a closed socket
// frees its slot.
func TestUILiveSocketsAreCappedPerUser(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) {
		withUI(s)
		s.MaxSocketsPerUser = 2
	})
	rev := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
	first, _, err := rev.socket("inbox", e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rev.socket("inbox", e.srv.URL); err != nil {
		t.Fatal(err)
	}
	if _, resp, err := rev.socket("inbox", e.srv.URL); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third socket: %v (%+v), want 429", err, resp)
	}
	other := e.signedIn(t, "other@example.com", domain.RoleReviewer)
	if _, _, err := other.socket("inbox", e.srv.URL); err != nil {
		t.Fatalf("another person's socket was refused: %v", err)
	}
	first.Close()
	eventually(t, "a slot freed by a closed socket", func() bool {
		_, _, err := rev.socket("inbox", e.srv.URL)
		return err == nil
	})
}

// One user's API keys hold at most MaxAttachPerUser attach streams; the
// next gets 429 too_many_streams, another user is not affected, and an
// ended stream frees its slot.
func TestAttachStreamsAreCappedPerUser(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) { s.MaxAttachPerUser = 2 })
	run, _ := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
	open := func(key string) (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/api/v1/runs/"+run.ID+"/attach", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); resp.Body.Close() })
		return resp, cancel
	}
	first, stop := open(e.admin)
	second, _ := open(e.admin)
	if first.StatusCode != http.StatusOK || second.StatusCode != http.StatusOK {
		t.Fatalf("attach: %d, %d", first.StatusCode, second.StatusCode)
	}
	// Read through open, which returns at the headers: an uncapped
	// stream would not end.
	if third, _ := open(e.admin); third.StatusCode != http.StatusTooManyRequests || third.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("a third attach = %d %s, want a 429 problem", third.StatusCode, third.Header.Get("Content-Type"))
	}
	problem(t, e.call(t, "GET", "/api/v1/runs/"+run.ID+"/attach", e.admin, ""), http.StatusTooManyRequests, "too_many_streams")
	if r, _ := open(e.reviewer); r.StatusCode != http.StatusOK {
		t.Fatalf("another user's attach = %d", r.StatusCode)
	}
	stop()
	eventually(t, "a slot freed by an ended stream", func() bool {
		r, _ := open(e.admin)
		return r.StatusCode == http.StatusOK
	})
}
