package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// engineMembers are the members of a suspension that a founder's pages
// never show, so neither do the founder's API answers.
var engineMembers = []string{"runId", "workflowId", "workflowVersion", "stepName", "stepKey", "reason", "checkpoint", "resumeStep",
	"assignee", "approvers", "approverRole", "policy", "votes", "tally", "resumeUrl", "group", "groupKey", "branch", "deferredCommands"}

// asFounderSees decodes a suspension answered to a founder and fails the
// test if it holds any engine member, or any of words (ids, step names,
// checkpoint values) anywhere. It returns the members.
func asFounderSees(t *testing.T, raw json.RawMessage, words ...string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	for _, k := range engineMembers {
		if _, ok := m[k]; ok {
			t.Errorf("a founder is shown %q: %s", k, raw)
		}
	}
	for _, w := range words {
		if strings.Contains(string(raw), w) {
			t.Errorf("a founder is shown %q: %s", w, raw)
		}
	}
	return m
}

// A founder's request, read through the API, says what their page says:
// what is asked and how, its fields and deadline, where it stands. Not
// its run, step or checkpoint, which a member of staff still sees.
func TestAPIFounderSeesTheirRequestAsTheirPageShowsIt(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "contract-flow", contractInput(founderAEmail, "Acme Robotics"))
		words := []string{run.ID, "contract-flow", "requestSignature", "fileContract", "ckpt-7f3a", "internalRef", "awaiting_signature"}

		one := decode[json.RawMessage](t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID, e.founderA, ""), http.StatusOK)
		list := decode[pageBody[json.RawMessage]](t, e.call(t, "GET", "/api/v1/suspensions?status=pending", e.founderA, ""), http.StatusOK)
		if len(list.Items) != 1 {
			t.Fatalf("the founder lists %d requests; want 1", len(list.Items))
		}
		for _, raw := range []json.RawMessage{one, list.Items[0]} {
			m := asFounderSees(t, raw, words...)
			for _, k := range []string{"id", "kind", "status", "title", "fields", "reasonLabel", "instructions", "accept", "wakeAt", "suspendedAt"} {
				if _, ok := m[k]; !ok {
					t.Errorf("a founder is not shown %q: %s", k, raw)
				}
			}
			var got struct {
				Title       string            `json:"title"`
				Fields      []json.RawMessage `json:"fields"`
				ReasonLabel string            `json:"reasonLabel"`
				Accept      []string          `json:"accept"`
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if got.Title != "Signed contract for Acme Robotics" || len(got.Fields) != 5 || got.ReasonLabel != "Signature needed" || len(got.Accept) != 1 {
				t.Errorf("the founder sees %s", raw)
			}
		}

		staff := e.suspension(t, s.ID)
		if staff.RunID != run.ID || staff.StepKey != "requestSignature" || !strings.Contains(string(staff.Checkpoint), "ckpt-7f3a") {
			t.Errorf("staff see %+v; want the suspension whole", staff)
		}
	})
}

// A founder's resume, and what came of it with ?wait=, answer in the
// founder's terms: their own answer, and where the run stands, but not
// the run's id, its output (which holds the checkpoint here) or the
// engine's words of the next request.
func TestAPIFounderResumeAnswersInTheirTerms(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "intake", map[string]string{"claimId": "claim-7f3a", "assignee": founderAEmail})
		raw := decode[json.RawMessage](t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume?wait=5s", e.founderA, resumeBody("r-1")), http.StatusOK)
		m := asFounderSees(t, raw, run.ID, "claim-7f3a", "collect", "finish")
		var next struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(m["next"], &next); err != nil || next.Status != "succeeded" {
			t.Errorf("the founder's resume?wait answers %s; want the run's status", raw)
		}
		if !strings.Contains(string(m["resumeData"]), "r-1") || string(m["resumedBy"]) != `"`+founderAEmail+`"` {
			t.Errorf("the founder's resume answers %s; want their own answer", raw)
		}
		plain, s2 := e.paused(t, "intake", map[string]string{"claimId": "claim-8e2b", "assignee": founderAEmail})
		asFounderSees(t, decode[json.RawMessage](t, e.call(t, "POST", "/api/v1/suspensions/"+s2.ID+"/resume", e.founderA, resumeBody("r-2")), http.StatusOK),
			plain.ID, "claim-8e2b")

		// The run goes on to an approval the founder may read but not
		// decide: shown as the founder's page would show it.
		started := decode[startedRun](t, e.call(t, "POST", "/api/v1/workflows/founder-doc/runs", e.founderA, `{"input":{"email":"`+founderAEmail+`"}}`), http.StatusCreated)
		note := e.pendingOf(t, started.ID)
		raw = decode[json.RawMessage](t, e.call(t, "POST", "/api/v1/suspensions/"+note.ID+"/resume?wait=5s", e.founderA, `{"resumeData":{"n":1}}`), http.StatusOK)
		m = asFounderSees(t, raw, started.ID, "sign-off", "awaiting_approval")
		var then struct {
			Status  string          `json:"status"`
			Request json.RawMessage `json:"request"`
			ForYou  bool            `json:"forYou"`
		}
		if err := json.Unmarshal(m["next"], &then); err != nil || then.Status != "suspended" || then.Request == nil || then.ForYou {
			t.Fatalf("the founder's resume?wait answers %s; want the approval, not theirs to decide", raw)
		}
		if got := asFounderSees(t, then.Request); !strings.Contains(string(got["kind"]), "approval") {
			t.Errorf("the next request is shown as %s", then.Request)
		}
		mine := decode[pageBody[json.RawMessage]](t, e.call(t, "GET", "/api/v1/suspensions?status=resumed&runId="+url.QueryEscape(started.ID), e.founderA, ""), http.StatusOK)
		for _, item := range mine.Items {
			asFounderSees(t, item, started.ID)
		}
	})
}

// A founder whose request someone else answered first is told that it was
// answered, and when, but not by whom: their pages never show who else
// answered, and neither does the conflict. Staff are told who.
func TestAPIFounderConflictDoesNotNameWhoAnswered(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		_, s := e.paused(t, "intake", map[string]string{"claimId": "claim-9c1d", "assignee": founderAEmail})
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, resumeBody("by-admin")), http.StatusOK)

		late := e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.founderA, resumeBody("r-late"))
		founder := decode[map[string]any](t, late, http.StatusConflict)
		if _, named := founder["resumedBy"]; named || founder["resumedAt"] == nil || strings.Contains(string(late.Body), adminEmail) {
			t.Errorf("the founder's conflict says %s; want when it was answered and not by whom", late)
		}
		again := e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, resumeBody("again"))
		if staff := decode[map[string]any](t, again, http.StatusConflict); staff["resumedBy"] != adminEmail {
			t.Errorf("staff's conflict says %s; want resumedBy %s", again, adminEmail)
		}
	})
}
