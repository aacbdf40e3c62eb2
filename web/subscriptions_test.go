package web_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/domain/hook"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// withHooks serves subscriptions whose URLs may name only 127.0.0.1 (the
// test's receivers), with retries 20 ms apart at first; the audit log is
// on (UIStore), so that subscriptions' audit entries are written.
func withHooks(srv *web.Server) {
	allow, err := flow.ParseAllowList("127.0.0.1")
	if err != nil {
		panic(err)
	}
	db := srv.Store.(*storage.DB)
	srv.UIStore = db
	srv.Hooks = &hook.Hooks{Store: db, Allow: allow, Key: make([]byte, 32),
		PublicURL: func() string { return "https://tollgate.example.com" },
		Opts:      hook.Opts{Poll: 10 * time.Millisecond, FirstRetry: 20 * time.Millisecond, Timeout: 5 * time.Second}}
}

// startHooks runs e's webhook dispatcher until the test ends.
func startHooks(t *testing.T, e *apiEnv) {
	h := e.api.Hooks
	h.Log = testLogger(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// receiver is a webhook endpoint that checks each delivery's signature
// and answers with the next of its statuses (the last one from then on).
type receiver struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	secret   string
	statuses []int
	got      []delivery
}

type delivery struct {
	Body      []byte
	Header    http.Header
	Signed    bool
	EventID   string
	EventType string
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	rc := &receiver{t: t, statuses: statuses}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var ev struct{ ID, Type string }
	_ = json.Unmarshal(body, &ev)
	signed := hook.Verify([]byte(rc.secret), r.Header.Get("Tollgate-Signature"), body, time.Now(), 5*time.Minute) == nil
	rc.got = append(rc.got, delivery{Body: body, Header: r.Header.Clone(), Signed: signed, EventID: ev.ID, EventType: ev.Type})
	status := rc.statuses[min(len(rc.got), len(rc.statuses))-1]
	w.WriteHeader(status)
	_, _ = io.WriteString(w, http.StatusText(status))
}

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secret = s
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

type subscriptionBody struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"createdAt"`
	Secret    string    `json:"secret"`
}

type attemptBody struct {
	EventID string `json:"eventId"`
	Type    string `json:"type"`
	Attempt int    `json:"attempt"`
	Status  string `json:"status"`
	Code    int    `json:"code"`
	Error   string `json:"error"`
}

// A receiver that answers 500 twice and then 200 gets the event three
// times, each signed under the secret of the 201 and with the same body
// and event id; the deliveries list shows the three attempts.
func TestWebhookDeliveredUntilAnswered(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withHooks, func(t *testing.T, e *apiEnv) {
		startHooks(t, e)
		rc := newReceiver(t, 500, 500, 200)
		sub := decode[subscriptionBody](t, e.call(t, "POST", "/api/v1/subscriptions", e.admin,
			jsonString(map[string]any{"url": rc.srv.URL + "/hooks", "events": []string{"suspension.created"}})), http.StatusCreated)
		if raw, err := hex.DecodeString(sub.Secret); err != nil || len(raw) != 32 {
			t.Fatalf("secret %q is not 256 bits in hex", sub.Secret)
		}
		rc.setSecret(sub.Secret)
		run, s := e.paused(t, "intake", map[string]string{"claimId": "c-1", "assignee": founderAEmail})
		waitUntil(t, "three attempts", func() bool { return len(rc.deliveries()) >= 3 })
		time.Sleep(100 * time.Millisecond) // a fourth attempt would come within this
		got := rc.deliveries()
		if len(got) != 3 {
			t.Fatalf("the receiver got %d deliveries; want 3", len(got))
		}
		for i, d := range got {
			if !d.Signed || d.EventID != got[0].EventID || d.EventID == "" || string(d.Body) != string(got[0].Body) || d.EventType != "suspension.created" ||
				d.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(d.Header.Get("User-Agent"), "Tollgate") {
				t.Errorf("delivery %d: signed=%v id=%q type=%q headers=%v body=%s", i+1, d.Signed, d.EventID, d.EventType, d.Header, d.Body)
			}
		}
		var body struct {
			CreatedAt time.Time `json:"createdAt"`
			Data      struct {
				ID, RunID, Status, URL string
			} `json:"data"`
		}
		if err := json.Unmarshal(got[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Data.ID != s.ID || body.Data.RunID != run.ID || body.Data.Status != "pending" || body.CreatedAt.IsZero() ||
			body.Data.URL != "https://tollgate.example.com/suspensions/"+s.ID {
			t.Errorf("delivery body = %s", got[0].Body)
		}

		waitUntil(t, "the third attempt recorded", func() bool {
			p := decode[pageBody[attemptBody]](t, e.call(t, "GET", "/api/v1/subscriptions/"+sub.ID+"/deliveries", e.admin, ""), http.StatusOK)
			return len(p.Items) == 3
		})
		p := decode[pageBody[attemptBody]](t, e.call(t, "GET", "/api/v1/subscriptions/"+sub.ID+"/deliveries", e.admin, ""), http.StatusOK)
		var summary []string
		for _, a := range p.Items {
			if a.EventID != got[0].EventID || a.Type != "suspension.created" {
				t.Errorf("attempt %+v is not of event %s", a, got[0].EventID)
			}
			summary = append(summary, jsonString([]any{a.Attempt, a.Status, a.Code}))
		}
		if want := []string{`[3,"succeeded",200]`, `[2,"retrying",500]`, `[1,"retrying",500]`}; !slices.Equal(summary, want) {
			t.Errorf("attempts = %v; want %v", summary, want)
		}
		if !strings.Contains(p.Items[1].Error, "500") {
			t.Errorf("a failed attempt's error = %q", p.Items[1].Error)
		}
		page1 := decode[pageBody[attemptBody]](t, e.call(t, "GET", "/api/v1/subscriptions/"+sub.ID+"/deliveries?limit=2", e.admin, ""), http.StatusOK)
		page2 := decode[pageBody[attemptBody]](t, e.call(t, "GET", "/api/v1/subscriptions/"+sub.ID+"/deliveries?limit=2&cursor="+page1.NextCursor, e.admin, ""), http.StatusOK)
		if len(page1.Items) != 2 || page1.NextCursor == "" || len(page2.Items) != 1 || page2.Items[0].Attempt != 1 || page2.NextCursor != "" {
			t.Errorf("pages of attempts = %+v then %+v", page1, page2)
		}
	})
}

// Deleting a subscription stops its retries: after the DELETE, at most
// the attempt already under way reaches the receiver.
func TestWebhookDeleteStopsDeliveries(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withHooks, func(t *testing.T, e *apiEnv) {
		startHooks(t, e)
		rc := newReceiver(t, 500)
		sub := decode[subscriptionBody](t, e.call(t, "POST", "/api/v1/subscriptions", e.admin,
			jsonString(map[string]any{"url": rc.srv.URL, "events": []string{"suspension.created", "run.failed"}})), http.StatusCreated)
		rc.setSecret(sub.Secret)
		e.paused(t, "intake", map[string]string{"claimId": "c-1", "assignee": founderAEmail})
		waitUntil(t, "a second attempt", func() bool { return len(rc.deliveries()) >= 2 })
		want(t, e.call(t, "DELETE", "/api/v1/subscriptions/"+sub.ID, e.admin, ""), http.StatusNoContent)
		after := len(rc.deliveries())
		time.Sleep(500 * time.Millisecond) // several retry periods
		if n := len(rc.deliveries()); n > after+1 {
			t.Fatalf("the receiver got %d deliveries after the subscription ended; want at most 1", n-after)
		}
		problem(t, e.call(t, "GET", "/api/v1/subscriptions/"+sub.ID+"/deliveries", e.admin, ""), http.StatusNotFound, "not_found")
	})
}

// A delivery is tried only within its window after the event: the last
// attempt is marked failed and none follows it.
func TestWebhookGivesUpAfterItsWindow(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withHooks, func(t *testing.T, e *apiEnv) {
		e.api.Hooks.Opts.GiveUpAfter = time.Second
		startHooks(t, e)
		rc := newReceiver(t, 503)
		sub := decode[subscriptionBody](t, e.call(t, "POST", "/api/v1/subscriptions", e.admin,
			jsonString(map[string]any{"url": rc.srv.URL, "events": []string{"suspension.created"}})), http.StatusCreated)
		e.paused(t, "intake", map[string]string{"claimId": "c-1", "assignee": founderAEmail})
		var last attemptBody
		waitUntil(t, "a failed attempt", func() bool {
			p := decode[pageBody[attemptBody]](t, e.call(t, "GET", "/api/v1/subscriptions/"+sub.ID+"/deliveries", e.admin, ""), http.StatusOK)
			if len(p.Items) > 0 {
				last = p.Items[0]
			}
			return last.Status == "failed"
		})
		n := len(rc.deliveries())
		time.Sleep(300 * time.Millisecond)
		if got := len(rc.deliveries()); got != n || last.Attempt != n || last.Code != 503 || n < 2 {
			t.Errorf("%d deliveries, then %d more; the last attempt %+v", n, got-n, last)
		}
	})
}

// Subscriptions are for admins: reviewers and founders get 403 on every
// route. Bad input is refused with a stable code and creates nothing;
// the secret is in the 201 alone.
func TestAPISubscriptions(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withHooks, func(t *testing.T, e *apiEnv) {
		startHooks(t, e)
		rc := newReceiver(t, 200)
		r := e.call(t, "POST", "/api/v1/subscriptions", e.admin, jsonString(map[string]any{"url": rc.srv.URL + "/in", "events": []string{"run.failed", "run.succeeded"}}))
		sub := decode[subscriptionBody](t, r, http.StatusCreated)
		if sub.ID == "" || sub.URL != rc.srv.URL+"/in" || !slices.Equal(sub.Events, []string{"run.failed", "run.succeeded"}) || sub.CreatedAt.IsZero() || sub.Secret == "" {
			t.Fatalf("created subscription = %s", r.Body)
		}
		if loc := r.Header.Get("Location"); loc != "/api/v1/subscriptions/"+sub.ID {
			t.Errorf("Location = %q", loc)
		}
		routes := []struct{ method, path, body string }{
			{"POST", "/api/v1/subscriptions", jsonString(map[string]any{"url": rc.srv.URL, "events": []string{"run.failed"}})},
			{"GET", "/api/v1/subscriptions", ""},
			{"GET", "/api/v1/subscriptions/" + sub.ID, ""},
			{"GET", "/api/v1/subscriptions/" + sub.ID + "/deliveries", ""},
			{"DELETE", "/api/v1/subscriptions/" + sub.ID, ""},
		}
		for _, rt := range routes {
			for _, key := range []string{e.reviewer, e.founderA} {
				problem(t, e.call(t, rt.method, rt.path, key, rt.body), http.StatusForbidden, "forbidden")
			}
		}

		list := e.call(t, "GET", "/api/v1/subscriptions", e.admin, "")
		subs := decode[pageBody[subscriptionBody]](t, list, http.StatusOK)
		one := e.call(t, "GET", "/api/v1/subscriptions/"+sub.ID, e.admin, "")
		if len(subs.Items) != 1 || subs.Items[0].ID != sub.ID || decode[subscriptionBody](t, one, http.StatusOK).ID != sub.ID {
			t.Fatalf("list = %s; one = %s", list.Body, one.Body)
		}
		for _, b := range [][]byte{list.Body, one.Body} {
			if strings.Contains(string(b), sub.Secret) || strings.Contains(string(b), `"secret"`) {
				t.Errorf("the secret is shown again: %s", b)
			}
		}

		for _, tc := range []struct {
			name, body, code, field string
		}{
			{"no url", `{"events":["run.failed"]}`, "invalid_url", "/url"},
			{"not http", `{"url":"ftp://127.0.0.1/x","events":["run.failed"]}`, "invalid_url", "/url"},
			{"relative", `{"url":"/hooks","events":["run.failed"]}`, "invalid_url", "/url"},
			{"credentials", `{"url":"http://user:pw@127.0.0.1/","events":["run.failed"]}`, "invalid_url", "/url"},
			{"refused address", `{"url":"http://10.0.0.1/hooks","events":["run.failed"]}`, "address_refused", "/url"},
			{"refused name", `{"url":"https://hooks.slack.com/services/x","events":["run.failed"]}`, "address_refused", "/url"},
			{"no events", `{"url":"http://127.0.0.1/","events":[]}`, "no_event_types", "/events"},
			{"unknown event", `{"url":"http://127.0.0.1/","events":["run.failed","run.started"]}`, "unknown_event_type", "/events/1"},
			{"twice", `{"url":"http://127.0.0.1/","events":["run.failed","run.failed"]}`, "duplicate_event_type", "/events/1"},
			{"unknown member", `{"url":"http://127.0.0.1/","events":["run.failed"],"secret":"mine"}`, "invalid_json", ""},
		} {
			p := problem(t, e.call(t, "POST", "/api/v1/subscriptions", e.admin, tc.body), statusOf(tc.code), tc.code)
			if tc.field != "" && !hasField(p, tc.field) {
				t.Errorf("%s: problem %+v does not point at %s", tc.name, p, tc.field)
			}
		}
		if n := len(decode[pageBody[subscriptionBody]](t, e.call(t, "GET", "/api/v1/subscriptions", e.admin, ""), http.StatusOK).Items); n != 1 {
			t.Errorf("refused subscriptions were stored: %d subscriptions", n)
		}
		problem(t, e.call(t, "GET", "/api/v1/subscriptions/"+sub.ID+"/deliveries?limit=0", e.admin, ""), http.StatusUnprocessableEntity, "validation_failed")

		for _, path := range []string{"/api/v1/subscriptions/nope", "/api/v1/subscriptions/nope/deliveries"} {
			problem(t, e.call(t, "GET", path, e.admin, ""), http.StatusNotFound, "not_found")
		}
		problem(t, e.call(t, "DELETE", "/api/v1/subscriptions/nope", e.admin, ""), http.StatusNotFound, "not_found")
		want(t, e.call(t, "DELETE", "/api/v1/subscriptions/"+sub.ID, e.admin, ""), http.StatusNoContent)
		problem(t, e.call(t, "GET", "/api/v1/subscriptions/"+sub.ID, e.admin, ""), http.StatusNotFound, "not_found")
		var n int
		if err := e.db.Bun().QueryRowContext(t.Context(), "SELECT count(*) FROM audit_log WHERE action IN ('subscription.create', 'subscription.delete')").Scan(&n); err != nil || n != 2 {
			t.Errorf("%d audit entries for one subscription made and ended (%v); want 2", n, err)
		}
	})
}

// Subscriptions are listed like every list: a page at a time, oldest
// first, with a cursor that leads through all of them once, and a bad
// limit or cursor refused with validation_failed.
func TestAPISubscriptionsArePaged(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withHooks, func(t *testing.T, e *apiEnv) {
		var made []string
		for i := range 5 {
			body := jsonString(map[string]any{"url": fmt.Sprintf("http://127.0.0.1/hook-%d", i), "events": []string{"run.failed"}})
			made = append(made, decode[subscriptionBody](t, e.call(t, "POST", "/api/v1/subscriptions", e.admin, body), http.StatusCreated).ID)
		}
		var listed []string
		pages := 0
		for cursor := ""; ; pages++ {
			p := decode[pageBody[subscriptionBody]](t, e.call(t, "GET", "/api/v1/subscriptions?limit=2&cursor="+url.QueryEscape(cursor), e.admin, ""), http.StatusOK)
			if len(p.Items) > 2 {
				t.Fatalf("a page of %d subscriptions; want at most 2", len(p.Items))
			}
			for _, s := range p.Items {
				listed = append(listed, s.ID)
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		slices.Sort(listed) // subscriptions made in the same instant follow in id order
		slices.Sort(made)
		if !slices.Equal(listed, made) || pages != 2 {
			t.Errorf("paged through %v in %d pages after the first; want %v in 2", listed, pages, made)
		}
		for _, q := range []string{"limit=0", "limit=501", "cursor=not-a-cursor"} {
			problem(t, e.call(t, "GET", "/api/v1/subscriptions?"+q, e.admin, ""), http.StatusUnprocessableEntity, "validation_failed")
		}
	})
}

func statusOf(code string) int {
	if code == "invalid_json" {
		return http.StatusBadRequest
	}
	return http.StatusUnprocessableEntity
}

// waitUntil polls cond for up to 20 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
