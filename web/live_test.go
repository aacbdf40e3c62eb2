package web_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
)

// socket opens the live stream of a page as the browser b would.
func (b *browser) socket(scope, origin string) (*websocket.Conn, *http.Response, error) {
	b.t.Helper()
	u := "ws" + strings.TrimPrefix(b.base, "http") + "/live?scope=" + scope
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	for _, c := range b.hc.Jar.Cookies(mustURL(b.t, b.base)) {
		h.Add("Cookie", c.Name+"="+c.Value)
	}
	conn, resp, err := websocket.DefaultDialer.DialContext(b.t.Context(), u, h)
	if conn != nil {
		b.t.Cleanup(func() { conn.Close() })
	}
	return conn, resp, err
}

type liveMsg struct {
	Type  string `json:"type"`
	RunID string `json:"runId"`
}

// listen reads a stream's messages into a channel until it closes (a
// websocket read that times out breaks the connection, so reads never time
// out here; the channel's reader waits instead).
func listen(t *testing.T, c *websocket.Conn) <-chan liveMsg {
	ch := make(chan liveMsg, 64)
	go func() {
		defer close(ch)
		for {
			_, raw, err := c.ReadMessage()
			if err != nil {
				return
			}
			var m liveMsg
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Errorf("live message %q: %v", raw, err)
				return
			}
			ch <- m
		}
	}()
	return ch
}

// next waits up to d for a message; ok is false when none came.
func next(ch <-chan liveMsg, d time.Duration) (liveMsg, bool) {
	select {
	case m, ok := <-ch:
		return m, ok
	case <-time.After(d):
		return liveMsg{}, false
	}
}

// waitFor reads messages until one is about runID.
func waitFor(t *testing.T, ch <-chan liveMsg, runID string) {
	t.Helper()
	receiveUntil(t, ch, 5*time.Second, "a live message about run "+runID, func(m liveMsg) bool { return m.RunID == runID })
}

func TestUILiveUpdates(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		rev := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		origin := e.srv.URL

		// The handshake must come from this site, from a signed-in tab,
		// for a scope its role may watch.
		if _, resp, err := rev.socket("inbox", "https://evil.example"); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-origin handshake = %v %v; want 403", resp, err)
		}
		if _, _, err := e.browser(t).socket("inbox", origin); err == nil {
			t.Fatal("a signed-out tab opened a live stream")
		}
		a := e.signedIn(t, "a@founders.example", domain.RoleFounder)
		if _, resp, err := a.socket("inbox", origin); err == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("founder on the inbox stream = %v; want 403", err)
		}

		inboxConn, _, err := rev.socket("inbox", origin)
		if err != nil {
			t.Fatal(err)
		}
		mineConn, _, err := a.socket("my", origin)
		if err != nil {
			t.Fatal(err)
		}
		inbox, mine := listen(t, inboxConn), listen(t, mineConn)
		time.Sleep(50 * time.Millisecond) // registered before the changes below

		// A run for someone else: the reviewer hears of it, founder A not.
		other, _ := e.paused(t, "intake", map[string]string{"claimId": "x", "assignee": "b@founders.example"})
		waitFor(t, inbox, other.ID)
		if m, ok := next(mine, 300*time.Millisecond); ok {
			t.Fatalf("founder A was told of another founder's run: %+v", m)
		}

		// A's own run: A hears that something of theirs changed, and no more.
		run, s := e.paused(t, "intake", map[string]string{"claimId": "y", "assignee": "A@Founders.example"})
		m, ok := next(mine, 5*time.Second)
		if !ok || m.Type != "changed" || m.RunID != "" {
			t.Fatalf("founder's message = %+v, %v; want a bare change notice", m, ok)
		}

		// A run page's stream carries that run's changes: the resume.
		runConn, _, err := rev.socket("run:"+run.ID, origin)
		if err != nil {
			t.Fatal(err)
		}
		runTab := listen(t, runConn)
		time.Sleep(50 * time.Millisecond)
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, resumeBody("d-1")), http.StatusOK)
		waitFor(t, runTab, run.ID)
		waitFor(t, inbox, run.ID)
	})
}

// CloseStreams, called when the server begins to shut down, ends every
// live page's websocket at once with "going away", so pages reconnect
// rather than hold the shutdown until its deadline.
func TestLivePagesEndAtShutdown(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withUI)
	rev := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
	conn, _, err := rev.socket("inbox", e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	e.api.CloseStreams()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, _, err := conn.ReadMessage()
		if err == nil {
			continue // a message sent before the close
		}
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("the live page's socket ended with %v; want a close, going away", err)
		}
		return
	}
}
