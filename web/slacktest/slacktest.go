// Package slacktest is Slack's Web API as Tollgate calls it, in the test
// process: a fake that keeps the messages posted and updated, the
// ephemeral messages and the modals opened, and knows a few people by
// Slack id and email; and interactions signed as Slack signs them.
package slacktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Token is the bot token the fake accepts; Team is its workspace. People
// whose Slack id begins with X are of another workspace (Slack Connect).
const (
	Token = "xoxb-test"
	Team  = "TTOLLGATE"
)

func teamOf(user string) string {
	if strings.HasPrefix(user, "X") {
		return "TPARTNER"
	}
	return Team
}

// Server is the fake Web API; its URL + "/api/" is the API's address.
// Its channel #approvals has the id CAPPROVALS; a direct message to user U
// is in channel DU.
type Server struct {
	*httptest.Server
	mu        sync.Mutex
	people    map[string]string // Slack user id → email
	posts     []Post
	updates   []Post
	ephemeral []Post
	views     []json.RawMessage
	failPosts int
	hold      chan struct{}
	holding   chan struct{}
}

// Post is a message as the fake keeps it.
type Post struct {
	Channel, TS, User, Text string
	Blocks                  json.RawMessage
	Metadata                json.RawMessage
	At                      time.Time
}

// New starts a fake that knows people (Slack user id → email) for the
// test; it stops when the test ends.
func New(t testing.TB, people map[string]string) *Server {
	t.Helper()
	f := &Server{people: people, holding: make(chan struct{}, 16)}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// FailPosts makes the next n chat.postMessage calls fail after posting,
// as if their answer were lost.
func (f *Server) FailPosts(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failPosts = n
}

// Hold makes chat.postMessage keep each message and then wait, without
// answering, until Release; Holding is signalled as each starts waiting.
func (f *Server) Hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = make(chan struct{})
}

// Holding is signalled when a post starts waiting (see Hold).
func (f *Server) Holding() <-chan struct{} { return f.holding }

// Release ends Hold: the posts waiting fail, as if the connection were
// lost.
func (f *Server) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hold != nil {
		close(f.hold)
		f.hold = nil
	}
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	var jsonBody map[string]json.RawMessage
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(r.Body).Decode(&jsonBody); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+Token && r.Form.Get("token") != Token {
		reply(w, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	p := Post{Channel: r.Form.Get("channel"), TS: r.Form.Get("ts"), User: r.Form.Get("user"), Text: r.Form.Get("text"),
		Blocks: json.RawMessage(r.Form.Get("blocks")), Metadata: json.RawMessage(r.Form.Get("metadata")), At: time.Now()}
	switch method {
	case "chat.postMessage":
		if strings.HasPrefix(p.Channel, "#") {
			if p.Channel != "#approvals" {
				reply(w, map[string]any{"ok": false, "error": "channel_not_found"})
				return
			}
			p.Channel = "CAPPROVALS"
		}
		p.TS = fmt.Sprintf("1700000000.%06d", len(f.posts)+1)
		f.posts = append(f.posts, p)
		if hold := f.hold; hold != nil {
			f.holding <- struct{}{}
			f.mu.Unlock()
			<-hold
			f.mu.Lock()
			http.Error(w, "lost", http.StatusBadGateway)
			return
		}
		if f.failPosts > 0 {
			f.failPosts--
			http.Error(w, "lost", http.StatusBadGateway)
			return
		}
		reply(w, map[string]any{"ok": true, "channel": p.Channel, "ts": p.TS})
	case "chat.update":
		f.updates = append(f.updates, p)
		reply(w, map[string]any{"ok": true, "channel": p.Channel, "ts": p.TS})
	case "chat.postEphemeral":
		f.ephemeral = append(f.ephemeral, p)
		reply(w, map[string]any{"ok": true, "message_ts": "1700000001.000001"})
	case "views.open":
		f.views = append(f.views, jsonBody["view"])
		reply(w, map[string]any{"ok": true, "view": map[string]any{"id": "V1"}})
	case "auth.test":
		reply(w, map[string]any{"ok": true, "team_id": Team, "user_id": "UTOLLGATE"})
	case "users.info":
		email, ok := f.people[r.Form.Get("user")]
		if !ok {
			reply(w, map[string]any{"ok": false, "error": "user_not_found"})
			return
		}
		reply(w, map[string]any{"ok": true, "user": map[string]any{"id": r.Form.Get("user"), "team_id": teamOf(r.Form.Get("user")), "profile": map[string]any{"email": email}}})
	case "users.lookupByEmail":
		for id, email := range f.people {
			if strings.EqualFold(email, r.Form.Get("email")) && teamOf(id) == Team { // the workspace's own people
				reply(w, map[string]any{"ok": true, "user": map[string]any{"id": id}})
				return
			}
		}
		reply(w, map[string]any{"ok": false, "error": "users_not_found"})
	case "conversations.open":
		reply(w, map[string]any{"ok": true, "channel": map[string]any{"id": "D" + r.Form.Get("users")}})
	case "conversations.list":
		reply(w, map[string]any{"ok": true, "channels": []any{map[string]any{"id": "CAPPROVALS", "name": "approvals"}}})
	case "conversations.history":
		var msgs []any
		for _, q := range f.posts {
			if q.Channel == r.Form.Get("channel") {
				msgs = append(msgs, map[string]any{"type": "message", "ts": q.TS, "text": q.Text, "metadata": q.Metadata})
			}
		}
		reply(w, map[string]any{"ok": true, "messages": msgs, "has_more": false})
	default:
		reply(w, map[string]any{"ok": false, "error": "unknown_method"})
	}
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Snapshot returns copies of what the fake keeps: the messages posted and
// updated, the ephemeral ones and the modals opened.
func (f *Server) Snapshot() (posts, updates, ephemeral []Post, views []json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Post(nil), f.posts...), append([]Post(nil), f.updates...), append([]Post(nil), f.ephemeral...), append([]json.RawMessage(nil), f.views...)
}

// Interaction is an interaction as Slack sends it to target: the payload
// as a form, signed with secret at ts.
func Interaction(t *testing.T, target, secret string, ts time.Time, payload any) *http.Request {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	body := "payload=" + url.QueryEscape(string(raw))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", stamp, body)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return req
}

// Click is a block_actions payload: user pressed button action on the
// message of suspension id in channel.
func Click(user, channel, action, id string) map[string]any {
	return map[string]any{"type": "block_actions", "user": map[string]any{"id": user}, "team": map[string]any{"id": teamOf(user)}, "channel": map[string]any{"id": channel},
		"container": map[string]any{"channel_id": channel}, "trigger_id": fmt.Sprintf("trigger-%s-%d", user, time.Now().UnixNano()),
		"actions": []any{map[string]any{"action_id": action, "block_id": "decide", "type": "button", "value": id, "action_ts": fmt.Sprint(time.Now().UnixNano())}}}
}

// Submit is a view_submission payload of the modal with private metadata
// meta and the values given, by block id.
func Submit(user, callback, meta string, values map[string]map[string]any) map[string]any {
	return map[string]any{"type": "view_submission", "user": map[string]any{"id": user}, "team": map[string]any{"id": teamOf(user)},
		"view": map[string]any{"callback_id": callback, "private_metadata": meta, "state": map[string]any{"values": values}}}
}
