package web_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/replay"
	"github.com/tollgatehq/tollgate/web"
)

// replayPipeline waits for a payment signal, asks for a sign-off, and
// returns what it got.
func replayPipeline() *replay.Definition {
	return replay.Workflow("pipeline", "1", func(c *replay.Context, _ any) (map[string]any, error) {
		c.Emit("progress", map[string]string{"stage": "waiting for payment"})
		p, err := replay.WaitForEvent[struct{ Amount int }](c, "payment", replay.WithID("pay"))
		if err != nil {
			return nil, err
		}
		if err := c.SetState("stage", "awaiting sign-off"); err != nil {
			return nil, err
		}
		d, err := c.Approve(replay.ApproveOptions{ID: "sign-off", Title: "Pay out?"})
		if err != nil {
			return nil, err
		}
		return map[string]any{"amount": p.Amount, "approved": d.Approved, "by": d.By, "feedback": d.Feedback}, nil
	})
}

// replaySignOffs asks founder A, by name, then any admin.
func replaySignOffs() *replay.Definition {
	return replay.Workflow("sign-offs", "1", func(c *replay.Context, _ any) ([]string, error) {
		var by []string
		for _, o := range []replay.ApproveOptions{
			{ID: "founder", Title: "Founder sign-off", Approvers: []string{"Founder.A@Example.com"}},
			{ID: "admins", Title: "Admin sign-off", Role: domain.RoleAdmin,
				Schema: json.RawMessage(`{"type":"object","properties":{"comment":{"type":"string","minLength":3}}}`)},
		} {
			d, err := c.Approve(o)
			if err != nil {
				return nil, err
			}
			by = append(by, d.By)
		}
		return by, nil
	})
}

// sseEvent is one server-sent event.
type sseEvent struct {
	ID, Event string
	Data      json.RawMessage
}

// attach opens a run's attach stream; its events arrive on the channel,
// which closes when the stream ends.
func (e *apiEnv) attach(t *testing.T, runID, lastEventID string) <-chan sseEvent {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", e.srv.URL+"/api/v1/runs/"+runID+"/attach", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.admin)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("attach: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 256)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Event != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.Event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return out
}

// String is what a failing test prints of an event it read.
func (ev sseEvent) String() string { return ev.Event }

// until reads the stream up to the first event named stop and returns the
// names read, stop included.
func until(t *testing.T, events <-chan sseEvent, stop string) ([]string, sseEvent) {
	t.Helper()
	read := receiveUntil(t, events, 20*time.Second, stop, func(ev sseEvent) bool { return ev.Event == stop })
	names := make([]string, len(read))
	for i, ev := range read {
		names[i] = ev.Event
	}
	return names, read[len(read)-1]
}

// A replay run driven over the API: the run shows what it awaits, a
// signal resolves its wait once (a repeat is a duplicate, another id
// loses with signal_lost, with or without its stepId), an approval
// through the suspension endpoints resumes it with who decided, and an
// attached client sees RUN_STARTED, the log, each pause, live
// observability events and the end.
func TestAPIReplaySignalsApprovalsAndAttach(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run := e.startRun(t, "pipeline", nil)
		e.waitRun(t, run.ID, "suspended")
		got := e.run(t, run.ID)
		if len(got.Awaiting) != 1 || got.Awaiting[0].StepID != "pay" || got.Awaiting[0].Kind != "signal" || got.Awaiting[0].Name != "payment" {
			t.Fatalf("a run paused on a signal awaits it: %+v", got.Awaiting)
		}
		stream := e.attach(t, run.ID, "")
		names, paused := until(t, stream, "RUN_PAUSED")
		if names[0] != "RUN_STARTED" || !strings.Contains(strings.Join(names, " "), "SIGNAL_AWAITED") || !strings.Contains(string(paused.Data), `"stepId":"pay"`) {
			t.Errorf("attached to a paused run: %q, pause %s", names, paused.Data)
		}

		signals := "/api/v1/runs/" + run.ID + "/signals"
		problem(t, e.call(t, "POST", signals, e.founderA, `{"name":"payment","signalId":"s-1"}`), http.StatusForbidden, "forbidden")
		p := problem(t, e.call(t, "POST", signals, e.admin, `{"name":"payment"}`), http.StatusUnprocessableEntity, "validation_failed")
		if !hasField(p, "/signalId") {
			t.Errorf("a signal without an id: %+v", p)
		}
		problem(t, e.call(t, "POST", "/api/v1/runs/no-such-run/signals", e.admin, `{"name":"payment","signalId":"s-1"}`), http.StatusNotFound, "not_found")
		body := `{"name":"payment","signalId":"s-1","stepId":"pay","payload":{"Amount":42}}`
		type signalBody struct {
			Status    string `json:"status"`
			Duplicate bool   `json:"duplicate"`
			StepID    string `json:"stepId"`
		}
		if s := decode[signalBody](t, e.call(t, "POST", signals, e.admin, body), http.StatusOK); s.Status != "delivered" || s.Duplicate || s.StepID != "pay" {
			t.Errorf("the signal: %+v", s)
		}
		if s := decode[signalBody](t, e.call(t, "POST", signals, e.admin, body), http.StatusOK); !s.Duplicate {
			t.Errorf("the same signal again: %+v", s)
		}
		problem(t, e.call(t, "POST", signals, e.admin, `{"name":"payment","signalId":"s-2","stepId":"pay","payload":{"Amount":1}}`), http.StatusConflict, "signal_lost")
		// By name too: the run resolved its payment wait and has none pending.
		if p := problem(t, e.call(t, "POST", signals, e.admin, `{"name":"payment","signalId":"s-3","payload":{"Amount":2}}`), http.StatusConflict, "signal_lost"); p.WinnerSignalID != "s-1" || p.ResolvedAt == nil {
			t.Errorf("a payment by name after the wait was resolved: %+v", p)
		}

		names, paused = until(t, stream, "RUN_PAUSED")
		joined := strings.Join(names, " ")
		if !strings.Contains(joined, "SIGNAL_RESOLVED") || !strings.Contains(joined, "CUSTOM") || !strings.Contains(joined, "STATE_DELTA") || !strings.Contains(joined, "APPROVAL_REQUESTED") || !strings.Contains(string(paused.Data), `"kind":"approval"`) {
			t.Errorf("after the signal the stream has %q, pause %s", names, paused.Data)
		}
		var approval string
		for _, s := range e.run(t, run.ID).Suspensions {
			if s.Status == "pending" {
				approval = s.ID
			}
		}
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+approval+"/approve", e.reviewer, `{"comment":"go ahead"}`), http.StatusOK)
		_, ended := until(t, stream, "RUN_ENDED")
		if !strings.Contains(string(ended.Data), `"status":"succeeded"`) {
			t.Errorf("the end: %s", ended.Data)
		}
		if _, open := <-stream; open {
			t.Error("the stream goes on after the run ended")
		}
		done := e.waitRun(t, run.ID, "succeeded")
		if !sameJSON(t, done.Output, json.RawMessage(`{"amount":42,"approved":true,"by":"`+reviewerEmail+`","feedback":"go ahead"}`)) {
			t.Errorf("output %s", done.Output)
		}

		// Reattaching after the end: the log after the last id seen, then
		// the end.
		var all []sseEvent
		for ev := range e.attach(t, run.ID, "") {
			all = append(all, ev)
		}
		if len(all) < 3 || all[0].Event != "RUN_STARTED" || all[len(all)-1].Event != "RUN_ENDED" {
			t.Fatalf("attached to a finished run: %+v", all)
		}
		last := all[len(all)-2]
		var tail []string
		for ev := range e.attach(t, run.ID, last.ID) {
			tail = append(tail, ev.Event)
		}
		if strings.Join(tail, " ") != "RUN_STARTED RUN_ENDED" {
			t.Errorf("reattached after the last entry: %q", tail)
		}
		problem(t, e.call(t, "GET", "/api/v1/runs/"+run.ID+"/attach", e.founderA, ""), http.StatusNotFound, "not_found")
	})
}

// unannounced is a store whose changes reach no one: every change
// notification is lost.
type unannounced struct{ domain.Store }

// An attach stream whose change notifications are lost still reports the
// run's end: each heartbeat reads the run again.
func TestAPIAttachWithoutNotifications(t *testing.T) {
	t.Parallel()
	quiet := func(s *web.Server) { s.Store, s.AttachHeartbeat = unannounced{s.Store}, 50*time.Millisecond }
	forEachDialectWith(t, quiet, func(t *testing.T, e *apiEnv) {
		_, s := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		stream := e.attach(t, s.RunID, "")
		until(t, stream, "RUN_PAUSED")
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, resumeBody("d-1")), http.StatusOK)
		if _, ended := until(t, stream, "RUN_ENDED"); !strings.Contains(string(ended.Data), `"status":"succeeded"`) {
			t.Errorf("the end: %s", ended.Data)
		}
	})
}

// An approval that names its approvers, or a role, is theirs (and
// admins') to decide, with a decision that fits its schema: anyone else is refused with not_approver and
// nothing changes, through the API and the web app alike, and a founder
// it names sees it among their own.
func TestAPIApproversAndRole(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "sign-offs", nil)
		if s.StepKey != "founder" || !slices.Equal(s.Approvers, []string{founderAEmail}) || s.Assignee != "Founder.A@Example.com" {
			t.Fatalf("the founder's sign-off: %+v", s)
		}
		mine := func(key string) int {
			return len(decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?status=pending&runId="+run.ID, key, ""), http.StatusOK).Items)
		}
		if a, b := mine(e.founderA), mine(e.founderB); a != 1 || b != 0 {
			t.Fatalf("founder A lists %d, founder B %d; want 1 and 0", a, b)
		}
		approve := "/api/v1/suspensions/" + s.ID + "/approve"
		problem(t, e.call(t, "POST", approve, e.reviewer, `{}`), http.StatusForbidden, "not_approver")
		problem(t, e.call(t, "POST", approve, e.founderB, `{}`), http.StatusNotFound, "not_found")
		rev := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		p := rev.get("/suspensions/" + s.ID)
		wantPage(t, p, http.StatusOK, "Who may act", "founder.a@example.com, admins", "you are not among them")
		if strings.Contains(p.Body, "Assigned to") {
			t.Error("the page of a suspension that names who may act also names an assignee, whom the names overrule")
		}
		wantPage(t, rev.do("POST", "/suspensions/"+s.ID+"/decide", url.Values{"decision": {"approve"}}), http.StatusForbidden, "not among them")
		e.stillPending(t, s)
		want(t, e.call(t, "POST", approve, e.founderA, `{"comment":"mine"}`), http.StatusOK)

		var admins suspensionBody
		for deadline := time.Now().Add(10 * time.Second); admins.ID == ""; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the admins' sign-off never came")
			}
			for _, sp := range e.run(t, run.ID).Suspensions {
				if sp.Status == "pending" && sp.StepKey == "admins" {
					admins = sp
				}
			}
		}
		if admins.ApproverRole != "admin" || len(admins.Approvers) != 0 || admins.Assignee != "" {
			t.Fatalf("the admins' sign-off: %+v", admins)
		}
		approve = "/api/v1/suspensions/" + admins.ID + "/approve"
		problem(t, e.call(t, "POST", approve, e.reviewer, `{}`), http.StatusForbidden, "not_approver")
		problem(t, e.call(t, "POST", approve, e.founderA, `{}`), http.StatusNotFound, "not_found")
		problem(t, e.call(t, "POST", approve, e.admin, `{"comment":"ok"}`), http.StatusUnprocessableEntity, "validation_failed")
		e.stillPending(t, admins)
		want(t, e.call(t, "POST", approve, e.admin, `{"comment":"ship it"}`), http.StatusOK)
		done := e.waitRun(t, run.ID, "succeeded")
		if string(done.Output) != `["founder.a@example.com","admin@example.com"]` {
			t.Errorf("who decided: %s", done.Output)
		}
	})
}
