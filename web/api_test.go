package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
	"github.com/tollgatehq/tollgate/web"
)

func TestAPIRunLifecycle(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		input := map[string]string{"claimId": "c-1", "assignee": founderAEmail}
		r := e.call(t, "POST", "/api/v1/workflows/intake/runs", e.admin, jsonString(map[string]any{"input": input}))
		fields := decode[map[string]json.RawMessage](t, r, http.StatusCreated)
		for _, k := range []string{"id", "workflowId", "workflowVersion", "status", "input", "output", "error", "createdAt", "updatedAt"} {
			if _, ok := fields[k]; !ok {
				t.Errorf("start response lacks %q: %s", k, r.Body)
			}
		}
		run := decode[runBody](t, r, http.StatusCreated)
		if loc := r.Header.Get("Location"); loc != "/api/v1/runs/"+run.ID {
			t.Errorf("Location = %q; want /api/v1/runs/%s", loc, run.ID)
		}
		if run.WorkflowID != "intake" || run.WorkflowVersion != "1" || run.Status != "running" ||
			!sameJSON(t, run.Input, json.RawMessage(jsonString(input))) || string(run.Output) != "null" || run.Error != nil ||
			run.CreatedAt.IsZero() || run.UpdatedAt.IsZero() {
			t.Errorf("started run = %s", r.Body)
		}
		problem(t, e.call(t, "POST", "/api/v1/workflows/nope/runs", e.admin, `{"input":1}`), http.StatusNotFound, "not_found")

		e.waitRun(t, run.ID, "suspended")
		got := e.run(t, run.ID)
		if len(got.Suspensions) != 1 || got.Suspensions[0].Status != "pending" || got.Suspensions[0].Reason != "awaiting_documents" ||
			got.Suspensions[0].Kind != "input" || got.Suspensions[0].StepKey != "collect" || got.Suspensions[0].Assignee != founderAEmail {
			t.Fatalf("suspended run's suspensions = %+v", got.Suspensions)
		}
		s := got.Suspensions[0]
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, resumeBody("d-1")), http.StatusOK)
		done := e.waitRun(t, run.ID, "succeeded", "failed")
		if done.Status != "succeeded" || !strings.Contains(string(done.Output), "d-1") {
			t.Fatalf("finished run = %+v, output %s", done, done.Output)
		}

		events := decode[pageBody[eventBody]](t, e.call(t, "GET", "/api/v1/runs/"+run.ID+"/events", e.admin, ""), http.StatusOK).Items
		var types []string
		for i, ev := range events {
			if ev.Seq != int64(i+1) {
				t.Errorf("event %d has seq %d", i, ev.Seq)
			}
			types = append(types, ev.Type)
		}
		for _, typ := range []string{"RUN_CREATED", "STEP_COMPLETED", "WORKFLOW_PAUSED", "RUN_RESUMED", "RUN_SUCCEEDED"} {
			if !slices.Contains(types, typ) {
				t.Errorf("events %v lack %s", types, typ)
			}
		}
		if len(types) == 0 || types[0] != "RUN_CREATED" || types[len(types)-1] != "RUN_SUCCEEDED" {
			t.Errorf("events = %v; want RUN_CREATED first and RUN_SUCCEEDED last", types)
		}
		problem(t, e.call(t, "GET", "/api/v1/runs/no-such-run/events", e.admin, ""), http.StatusNotFound, "not_found")
		problem(t, e.call(t, "GET", "/api/v1/runs/no-such-run", e.admin, ""), http.StatusNotFound, "not_found")

		testListRuns(t, e, run.ID)
	})
}

// testListRuns adds two suspended intake runs and a review run to the
// succeeded one and checks the filters and paging of GET /api/v1/runs.
func testListRuns(t *testing.T, e *apiEnv, succeeded string) {
	t.Helper()
	var all []string
	for range 2 {
		r, _ := e.paused(t, "intake", map[string]string{"claimId": "Needle-7"})
		all = append(all, r.ID)
	}
	r, _ := e.paused(t, "review", map[string]int{"amount": 1})
	all = append(all, r.ID, succeeded)
	list := func(query string) pageBody[runBody] {
		t.Helper()
		return decode[pageBody[runBody]](t, e.call(t, "GET", "/api/v1/runs?"+query, e.admin, ""), http.StatusOK)
	}
	ids := func(p pageBody[runBody]) []string {
		var out []string
		for _, r := range p.Items {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}
	if got := ids(list("status=succeeded")); !slices.Equal(got, []string{succeeded}) {
		t.Errorf("status=succeeded lists %v; want [%s]", got, succeeded)
	}
	if got := list("workflowId=intake"); len(got.Items) != 3 {
		t.Errorf("workflowId=intake lists %d runs; want 3", len(got.Items))
	}
	if got := list("workflowId=review"); len(got.Items) != 1 || got.Items[0].WorkflowID != "review" {
		t.Errorf("workflowId=review lists %+v", got.Items)
	}
	if got := list("status=suspended&workflowId=intake"); len(got.Items) != 2 {
		t.Errorf("status=suspended&workflowId=intake lists %d runs; want 2", len(got.Items))
	}
	// Status lists, comma-separated or repeated, in any case; search by
	// id, workflow prefix and input text; creation time bounds.
	for query, want := range map[string][]string{
		"status=succeeded,suspended":               slices.Sorted(slices.Values(all)),
		"status=SUCCEEDED&status=failed":           {succeeded},
		"q=needle-7":                               slices.Sorted(slices.Values(all[:2])),
		"q=" + all[2]:                              {all[2]},
		"q=revi":                                   {all[2]},
		"q=nothing-like-it":                        nil,
		"createdAfter=2999-01-01T00:00:00Z":        nil,
		"createdBefore=2999-01-01T00:00:00Z":       slices.Sorted(slices.Values(all)),
		"createdAfter=2000-01-01T00:00:00%2B02:00": slices.Sorted(slices.Values(all)),
	} {
		if got := ids(list(query)); !slices.Equal(got, want) {
			t.Errorf("%s lists %v; want %v", query, got, want)
		}
	}
	var paged []runBody
	cursor, pages := "", 0
	for {
		p := list("limit=3&cursor=" + url.QueryEscape(cursor))
		if len(p.Items) > 3 {
			t.Fatalf("page of %d runs with limit=3", len(p.Items))
		}
		paged, pages = append(paged, p.Items...), pages+1
		if cursor = p.NextCursor; cursor == "" {
			break
		}
		if pages > 5 {
			t.Fatal("paging does not end")
		}
	}
	if got := ids(pageBody[runBody]{Items: paged}); !slices.Equal(got, slices.Sorted(slices.Values(all))) || pages != 2 {
		t.Errorf("paging in 3s listed %v in %d pages; want %v in 2", got, pages, all)
	}
	for i := 1; i < len(paged); i++ {
		if paged[i].CreatedAt.After(paged[i-1].CreatedAt) {
			t.Errorf("runs are not newest first: %v before %v", paged[i-1].CreatedAt, paged[i].CreatedAt)
		}
	}
	for q, param := range map[string]string{"status=bogus": "status", "status=failed,bogus": "status", "limit=0": "limit", "limit=501": "limit",
		"limit=x": "limit", "cursor=%21%21": "cursor", "createdAfter=yesterday": "createdAfter", "createdBefore=2026-01-01": "createdBefore"} {
		p := problem(t, e.call(t, "GET", "/api/v1/runs?"+q, e.admin, ""), http.StatusUnprocessableEntity, "validation_failed")
		if len(p.Errors) != 1 || p.Errors[0].Parameter != param || p.Errors[0].Field != "" {
			t.Errorf("GET /api/v1/runs?%s: errors %+v; want one naming the parameter %s", q, p.Errors, param)
		}
	}
}

// A run that paused many times shows what it awaits now, though its earlier
// waits fill the suspensions shown with it.
func TestAPIAwaitingAfterManyWaits(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run := e.startRun(t, "intake", map[string]string{"claimId": "c-1"})
		e.waitRun(t, run.ID, "suspended")
		// The earlier waits, resumed, are written directly: pausing the run
		// this often would take minutes.
		type pastWait struct {
			bun.BaseModel `bun:"table:suspensions"`

			ID, RunID, WorkflowID, WorkflowVersion, StepKey, Kind, Status string
			SuspendedAt, ResumedAt, CreatedAt                             time.Time
		}
		start := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
		past := make([]pastWait, domain.RunSuspensionsLimit)
		for i := range past {
			at := start.Add(time.Duration(i) * time.Second)
			past[i] = pastWait{ID: fmt.Sprintf("%s-%d", run.ID, i), RunID: run.ID, WorkflowID: "intake", WorkflowVersion: "1",
				StepKey: fmt.Sprintf("earlier-%d", i), Kind: "delay", Status: "resumed", SuspendedAt: at, ResumedAt: at, CreatedAt: at}
		}
		if _, err := e.db.Bun().NewInsert().Model(&past).Exec(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := e.run(t, run.ID)
		if len(got.Awaiting) != 1 || got.Awaiting[0].StepID != "collect" || got.Awaiting[0].Name != "awaiting_documents" {
			t.Fatalf("a run with %d earlier waits awaits %+v; want its pause at collect", len(past), got.Awaiting)
		}
	})
}

func TestAPIStartIdempotency(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		start := func(key, body string) reply {
			return e.call(t, "POST", "/api/v1/workflows/intake/runs", e.admin, body, "Idempotency-Key", key)
		}
		first := start("k-1", `{"input":{"claimId":"c-1","assignee":"x@example.com"}}`)
		run := decode[runBody](t, first, http.StatusCreated)
		if first.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("first start has Idempotent-Replayed: %q", first.Header.Get("Idempotent-Replayed"))
		}
		// Same input, other formatting and member order: the same request.
		for _, body := range []string{
			`{"input":{"claimId":"c-1","assignee":"x@example.com"}}`,
			`{ "input" : { "assignee" : "x@example.com", "claimId" : "c-1" } }`,
		} {
			again := start("k-1", body)
			if got := decode[runBody](t, again, http.StatusCreated); got.ID != run.ID {
				t.Errorf("replay started run %s; want %s", got.ID, run.ID)
			}
			if again.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay lacks Idempotent-Replayed: true")
			}
			if loc := again.Header.Get("Location"); loc != "/api/v1/runs/"+run.ID {
				t.Errorf("replay Location = %q", loc)
			}
		}
		problem(t, start("k-1", `{"input":{"claimId":"c-2"}}`), http.StatusUnprocessableEntity, "idempotency_key_reused")
		// The key is scoped to its workflow.
		other := decode[runBody](t, e.call(t, "POST", "/api/v1/workflows/review/runs", e.admin, `{"input":{"claimId":"c-2"}}`, "Idempotency-Key", "k-1"), http.StatusCreated)
		if other.ID == run.ID {
			t.Error("the same key on another workflow replayed the first run")
		}
		if other := decode[runBody](t, start("k-2", `{"input":{"claimId":"c-1","assignee":"x@example.com"}}`), http.StatusCreated); other.ID == run.ID {
			t.Error("another key replayed the first run")
		}
		problem(t, start(strings.Repeat("k", 256), `{}`), http.StatusUnprocessableEntity, "validation_failed")
		runs := decode[pageBody[runBody]](t, e.call(t, "GET", "/api/v1/runs?workflowId=intake", e.admin, ""), http.StatusOK)
		if len(runs.Items) != 2 {
			t.Errorf("intake has %d runs; want 2", len(runs.Items))
		}
	})
}

func TestAPIResume(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		if !sameJSON(t, s.ResumeSchema, receiptSchema) {
			t.Errorf("resumeSchema = %s", s.ResumeSchema)
		}
		path := "/api/v1/suspensions/" + s.ID + "/resume"

		for body, field := range map[string]string{
			`{"resumeData":{"receiptIds":[]}}`:             "/resumeData/receiptIds",
			`{"resumeData":{"receiptIds":5}}`:              "/resumeData/receiptIds",
			`{"resumeData":{"receiptIds":["d"],"note":7}}`: "/resumeData/note",
			`{"resumeData":{"receiptIds":[""]}}`:           "/resumeData/receiptIds/0",
			`{"resumeData":{}}`:                            "/resumeData",
			`{}`:                                           "/resumeData",
		} {
			p := problem(t, e.call(t, "POST", path, e.admin, body), http.StatusUnprocessableEntity, "validation_failed")
			if !hasField(p, field) {
				t.Errorf("resume with %s: errors %+v do not name %s", body, p.Errors, field)
			}
		}
		e.stillPending(t, s)

		body := `{"resumeData":{"receiptIds":["d-1","d-2"],"note":"first"}}`
		won := e.call(t, "POST", path, e.reviewer, body, "Idempotency-Key", "resume-1")
		winner := decode[suspensionBody](t, won, http.StatusOK)
		if winner.Status != "resumed" || winner.ResumedBy == nil || *winner.ResumedBy != reviewerEmail || winner.ResumedAt == nil ||
			!sameJSON(t, winner.ResumeData, json.RawMessage(`{"receiptIds":["d-1","d-2"],"note":"first"}`)) {
			t.Fatalf("winning resume = %s", won)
		}

		// The winner's retry gets its original answer, byte for byte.
		again := e.call(t, "POST", path, e.reviewer, body, "Idempotency-Key", "resume-1")
		want(t, again, http.StatusOK)
		if string(again.Body) != string(won.Body) {
			t.Errorf("replayed resume = %s; want %s", again.Body, won.Body)
		}

		for _, late := range []struct{ key, who, body string }{
			{"", e.admin, resumeBody("d-9")},
			{"resume-2", e.admin, resumeBody("d-9")},
			{"resume-1", e.reviewer, resumeBody("d-9")}, // the winner's key with other data
		} {
			r := e.call(t, "POST", path, late.who, late.body, "Idempotency-Key", late.key)
			p := problem(t, r, http.StatusConflict, "already_resumed")
			if p.ResumedBy != reviewerEmail || p.ResumedAt == nil || !p.ResumedAt.Equal(*winner.ResumedAt) {
				t.Errorf("late resume problem = %s; want resumedBy %s at %v", r, reviewerEmail, winner.ResumedAt)
			}
		}
		e.waitRun(t, run.ID, "succeeded")
		stored := e.suspension(t, s.ID)
		if !sameJSON(t, stored.ResumeData, winner.ResumeData) || stored.Status != "resumed" || *stored.ResumedBy != reviewerEmail {
			t.Errorf("stored suspension = %+v; want the winner's data", stored)
		}
		if n := e.finished.Load(); n != 1 {
			t.Errorf("resume step ran %d times; want 1", n)
		}
		// Resumed after its run finished: still the winner's record.
		problem(t, e.call(t, "POST", path, e.admin, resumeBody("d-10")), http.StatusConflict, "already_resumed")
		problem(t, e.call(t, "POST", "/api/v1/suspensions/no-such/resume", e.admin, resumeBody("d")), http.StatusNotFound, "not_found")
	})
}

func TestAPIApproveReject(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		approved, a := e.paused(t, "review", map[string]int{"amount": 42})
		if a.Kind != "approval" || a.Reason != "awaiting_approval" {
			t.Fatalf("review suspension = %+v", a)
		}
		rejected, r := e.paused(t, "review", map[string]int{"amount": 7})
		_, in := e.paused(t, "intake", map[string]string{"claimId": "c-1"})

		p := problem(t, e.call(t, "POST", "/api/v1/suspensions/"+in.ID+"/approve", e.reviewer, `{"comment":"ok"}`), http.StatusUnprocessableEntity, "validation_failed")
		if !strings.Contains(p.Detail, "not a review") {
			t.Errorf("approve of an input suspension: %+v", p)
		}
		problem(t, e.call(t, "POST", "/api/v1/suspensions/"+in.ID+"/reject", e.reviewer, `{}`), http.StatusUnprocessableEntity, "validation_failed")
		e.stillPending(t, in)
		p = problem(t, e.call(t, "POST", "/api/v1/suspensions/"+a.ID+"/resume", e.reviewer, `{"resumeData":{"approved":true}}`), http.StatusUnprocessableEntity, "validation_failed")
		if !strings.Contains(p.Detail, "approve or reject") {
			t.Errorf("resume of a review: %+v", p)
		}
		e.stillPending(t, a)
		problem(t, e.call(t, "POST", "/api/v1/suspensions/"+a.ID+"/approve", e.reviewer, `{"comment":"`+strings.Repeat("x", 10_001)+`"}`), http.StatusUnprocessableEntity, "validation_failed")
		e.stillPending(t, a)

		first := e.call(t, "POST", "/api/v1/suspensions/"+a.ID+"/approve", e.reviewer, `{"comment":"fine"}`, "Idempotency-Key", "approve-1")
		ok := decode[suspensionBody](t, first, http.StatusOK)
		if again := e.call(t, "POST", "/api/v1/suspensions/"+a.ID+"/approve", e.reviewer, `{"comment":"fine"}`, "Idempotency-Key", "approve-1"); again.Status != http.StatusOK || string(again.Body) != string(first.Body) {
			t.Errorf("replayed approval = %s; want %s", again, first)
		}
		// The reviewer decided: their decision is a vote, and each person
		// votes once.
		problem(t, e.call(t, "POST", "/api/v1/suspensions/"+a.ID+"/reject", e.reviewer, `{"comment":"fine"}`, "Idempotency-Key", "approve-1"), http.StatusConflict, "already_voted")
		if ok.Status != "resumed" || ok.Decision != "approved" || *ok.ResumedBy != reviewerEmail {
			t.Errorf("approval = %+v", ok)
		}
		done := e.waitRun(t, approved.ID, "succeeded", "failed")
		if done.Status != "succeeded" || !sameJSON(t, done.Output, json.RawMessage(`{"paid":{"amount":42}}`)) {
			t.Errorf("approved run = %+v, output %s", done, done.Output)
		}
		if n := e.paid.Load(); n != 1 {
			t.Errorf("deferred step ran %d times; want 1", n)
		}
		problem(t, e.call(t, "POST", "/api/v1/suspensions/"+a.ID+"/reject", e.admin, `{}`), http.StatusConflict, "already_resumed")

		no := decode[suspensionBody](t, e.call(t, "POST", "/api/v1/suspensions/"+r.ID+"/reject", e.admin, `{"comment":"too expensive"}`), http.StatusOK)
		if no.Decision != "rejected" {
			t.Errorf("rejection = %+v", no)
		}
		failed := e.waitRun(t, rejected.ID, "succeeded", "failed")
		if failed.Status != "failed" || failed.Error == nil || failed.Error.Code != "rejected" || !strings.Contains(failed.Error.Message, "too expensive") {
			t.Errorf("rejected run = %+v, error %+v", failed, failed.Error)
		}
		time.Sleep(100 * time.Millisecond) // give a wrongly queued deferred step the time to run
		if n := e.paid.Load(); n != 1 {
			t.Errorf("deferred step ran %d times after a rejection; want 1 in all", n)
		}
	})
}

func TestAPIStrictDecoding(t *testing.T) {
	t.Parallel()
	const maxBody = 2048
	forEachDialectWith(t, func(s *web.Server) { s.MaxBody = maxBody }, func(t *testing.T, e *apiEnv) {
		_, in := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		_, rv := e.paused(t, "review", map[string]int{"amount": 1})
		long := strings.Repeat("x", maxBody)
		type attempt struct {
			name, body, contentType string
			status                  int
			code                    string
		}
		common := []attempt{
			{"malformed", `{"comment":`, "", 400, "invalid_json"},
			{"not an object", `[1,2]`, "", 400, "invalid_json"},
			{"trailing data", `{} {}`, "", 400, "invalid_json"},
			{"unknown field", `{"bogus":1}`, "", 400, "invalid_json"},
			{"text/plain", `{}`, "text/plain", 415, "unsupported_media_type"},
			{"form", `a=b`, "application/x-www-form-urlencoded", 415, "unsupported_media_type"},
			{"latin1", `{}`, "application/json; charset=iso-8859-1", 415, "unsupported_media_type"},
		}
		endpoints := []struct {
			s     suspensionBody
			path  string
			cases []attempt
		}{
			{in, "/resume", append(common,
				attempt{"duplicate name", `{"resumeData":{"receiptIds":["a"]},"resumeData":{"receiptIds":["b"]}}`, "", 400, "invalid_json"},
				attempt{"nested duplicate", `{"resumeData":{"receiptIds":["a"],"receiptIds":["b"]}}`, "", 400, "invalid_json"},
				attempt{"wrong case", `{"ResumeData":{"receiptIds":["a"]}}`, "", 400, "invalid_json"},
				attempt{"NUL", `{"resumeData":{"receiptIds":["a\u0000b"]}}`, "", 400, "invalid_json"},
				attempt{"NUL in a name", `{"resumeData":{"receiptIds":["a"],"n\u0000te":"x"}}`, "", 400, "invalid_json"},
				attempt{"invalid UTF-8", "{\"resumeData\":{\"receiptIds\":[\"\xff\"]}}", "", 400, "invalid_json"},
				attempt{"huge number", `{"resumeData":{"receiptIds":["a"],"note":1e400}}`, "", 400, "invalid_json"},
				attempt{"too large", `{"resumeData":{"receiptIds":["a"],"note":"` + long + `"}}`, "", 413, "payload_too_large"},
			)},
			{rv, "/approve", append(common,
				attempt{"duplicate name", `{"comment":"x","comment":"y"}`, "", 400, "invalid_json"},
				attempt{"wrong case", `{"COMMENT":"x"}`, "", 400, "invalid_json"},
				attempt{"wrong type", `{"comment":5}`, "", 400, "invalid_json"},
				attempt{"NUL", `{"comment":"a\u0000b"}`, "", 400, "invalid_json"},
				attempt{"too large", `{"comment":"` + long + `"}`, "", 413, "payload_too_large"},
			)},
			{rv, "/reject", []attempt{
				{"duplicate name", `{"comment":"x","comment":"y"}`, "", 400, "invalid_json"},
				{"NUL", `{"comment":"\u0000"}`, "", 400, "invalid_json"},
			}},
		}
		for _, ep := range endpoints {
			for _, c := range ep.cases {
				var headers []string
				if c.contentType != "" {
					headers = []string{"Content-Type", c.contentType}
				}
				r := e.call(t, "POST", "/api/v1/suspensions/"+ep.s.ID+ep.path, e.admin, c.body, headers...)
				if r.Status != c.status {
					t.Errorf("%s %s: %s; want %d", ep.path, c.name, r, c.status)
					continue
				}
				problem(t, r, c.status, c.code)
			}
			e.stillPending(t, ep.s)
		}
		// Start and cancel decode just as strictly.
		problem(t, e.call(t, "POST", "/api/v1/workflows/intake/runs", e.admin, `{"input":"a\u0000"}`), 400, "invalid_json")
		problem(t, e.call(t, "POST", "/api/v1/workflows/intake/runs", e.admin, `{"input":1,"input":2}`), 400, "invalid_json")
		problem(t, e.call(t, "POST", "/api/v1/runs/"+in.RunID+"/cancel", e.admin, `{"force":true}`), 400, "invalid_json")
		e.stillPending(t, in)
	})
}

// Names equal but for case, at any depth of input, resume data or a signal
// payload, are refused with the place named: the databases keep such names
// in different orders, and a case-insensitive reader would take a different
// one on each.
func TestAPIRefusesCaseVariantNames(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		_, in := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		smuggle := `{"email":"ok@example.com","EMAIL":"victim@evil.test"}`
		for _, c := range []struct{ path, body, field string }{
			{"/api/v1/workflows/intake/runs", `{"input":` + smuggle + `}`, "/input/EMAIL"},
			{"/api/v1/workflows/intake/runs", `{"input":{"claim":{"to":[` + smuggle + `]}}}`, "/input/claim/to/0/EMAIL"},
			{"/api/v1/suspensions/" + in.ID + "/resume", `{"resumeData":{"documentIds":["a"],"who":` + smuggle + `}}`, "/resumeData/who/EMAIL"},
			{"/api/v1/runs/" + in.RunID + "/signals", `{"name":"n","signalId":"s-1","payload":` + smuggle + `}`, "/payload/EMAIL"},
		} {
			p := problem(t, e.call(t, "POST", c.path, e.admin, c.body), http.StatusBadRequest, "invalid_json")
			if !hasField(p, c.field) || !strings.Contains(p.Detail, "differ only in case") {
				t.Errorf("POST %s: %+v; want the case clash at %s", c.path, p, c.field)
			}
		}
		e.stillPending(t, in)
		if runs := decode[pageBody[runBody]](t, e.call(t, "GET", "/api/v1/runs?workflowId=intake", e.admin, ""), http.StatusOK); len(runs.Items) != 1 {
			t.Errorf("runs of intake = %d; want only the paused one", len(runs.Items))
		}
	})
}

func TestAPIAuth(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "intake", map[string]string{"claimId": "c-1", "assignee": "Founder.A@Example.com"})
		path := "/api/v1/suspensions/" + s.ID

		revokedID, revoked := e.addKey(t, e.userIDs[adminEmail])
		want(t, e.call(t, "GET", "/api/v1/runs", revoked, ""), http.StatusOK)
		if _, err := e.db.RevokeAPIKey(t.Context(), revokedID, time.Now()); err != nil {
			t.Fatal(err)
		}
		// The key's owner was looked up a moment ago and is trusted for the
		// cache's TTL; forgetting the user ends that at once.
		want(t, e.call(t, "GET", "/api/v1/runs", revoked, ""), http.StatusOK)
		e.api.ForgetUser(e.userIDs[adminEmail])
		disabled := e.addUser(t, "gone@example.com", "admin", true)
		for name, header := range map[string]string{
			"none":          "",
			"unknown key":   "Bearer tg_AAAAAAAAAAAAAAAAAAAAAAAAAA",
			"revoked key":   "Bearer " + revoked,
			"disabled user": "Bearer " + disabled,
			"empty bearer":  "Bearer ",
			"basic":         "Basic YWRtaW46YWRtaW4=",
			"bare key":      e.admin,
		} {
			for _, req := range [][2]string{{"GET", "/api/v1/runs"}, {"GET", path}, {"POST", path + "/resume"}, {"GET", "/api/v1/workflows"}} {
				var headers []string
				if header != "" {
					headers = []string{"Authorization", header}
				}
				body := ""
				if req[0] == "POST" {
					body = resumeBody("d")
				}
				r := e.call(t, req[0], req[1], "", body, headers...)
				problem(t, r, http.StatusUnauthorized, "unauthorized")
				if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: %s %s: WWW-Authenticate = %q", name, req[0], req[1], r.Header.Get("WWW-Authenticate"))
				}
			}
		}
		e.stillPending(t, s)
		// The scheme is case-insensitive (RFC 9110, section 11.1).
		for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
			want(t, e.call(t, "GET", "/api/v1/workflows", "", "", "Authorization", scheme+" "+e.admin), http.StatusOK)
		}

		// Founder B may not learn that A's suspension exists.
		problem(t, e.call(t, "GET", path, e.founderB, ""), http.StatusNotFound, "not_found")
		problem(t, e.call(t, "POST", path+"/resume", e.founderB, resumeBody("d")), http.StatusNotFound, "not_found")
		for who, key := range map[string]string{"founder A": e.founderA, "founder B": e.founderB, "reviewer": e.reviewer, "admin": e.admin} {
			list := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions", key, ""), http.StatusOK)
			seen := slices.ContainsFunc(list.Items, func(x suspensionBody) bool { return x.ID == s.ID })
			if seen != (who != "founder B") {
				t.Errorf("%s sees founder A's suspension: %v", who, seen)
			}
			if who == "founder B" && len(list.Items) > 0 {
				t.Errorf("founder B sees %+v", list.Items)
			}
		}
		// Nor through a page cursor, which encodes the last row's time and id.
		if b := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?limit=1", e.founderB, ""), http.StatusOK); b.NextCursor != "" {
			t.Errorf("founder B gets a cursor %q over others' suspensions", b.NextCursor)
		}
		// Founders see only their suspensions, nothing of runs.
		problem(t, e.call(t, "GET", "/api/v1/runs", e.founderA, ""), http.StatusForbidden, "forbidden")
		problem(t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/cancel", e.founderA, ""), http.StatusForbidden, "forbidden")
		problem(t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/steps/collect/resume", e.founderA, resumeBody("d")), http.StatusForbidden, "forbidden")
		problem(t, e.call(t, "GET", "/api/v1/runs/"+run.ID, e.founderA, ""), http.StatusNotFound, "not_found")
		problem(t, e.call(t, "GET", "/api/v1/runs/"+run.ID+"/events", e.founderA, ""), http.StatusNotFound, "not_found")
		problem(t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/cancel", e.reviewer, ""), http.StatusForbidden, "forbidden")
		e.stillPending(t, s)

		got := decode[suspensionBody](t, e.call(t, "GET", path, e.founderA, ""), http.StatusOK)
		if got.ID != s.ID {
			t.Errorf("founder A got suspension %s", got.ID)
		}
		res := decode[suspensionBody](t, e.call(t, "POST", path+"/resume", e.founderA, resumeBody("d-a")), http.StatusOK)
		if res.ResumedBy == nil || *res.ResumedBy != founderAEmail {
			t.Errorf("founder A's resume = %+v", res)
		}
		e.waitRun(t, run.ID, "succeeded")

		other, _ := e.paused(t, "intake", map[string]string{"claimId": "c-2"})
		cancelled := decode[runBody](t, e.call(t, "POST", "/api/v1/runs/"+other.ID+"/cancel", e.admin, ""), http.StatusOK)
		if cancelled.Status != "cancelled" {
			t.Errorf("admin cancel = %+v", cancelled)
		}
	})
}

func TestAPICancel(t *testing.T) {
	t.Parallel()
	// With the web app, whose audit log keeps the cancel and its reason.
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		path := "/api/v1/runs/" + run.ID + "/cancel"
		p := problem(t, e.call(t, "POST", path, e.admin, `{"reason": "`+strings.Repeat("x", 501)+`"}`), http.StatusUnprocessableEntity, "validation_failed")
		if !hasField(p, "/reason") {
			t.Errorf("a reason too long: %+v; want the field /reason", p)
		}
		got := decode[runBody](t, e.call(t, "POST", path, e.admin, `{"reason": "  duplicate of claim c-0 "}`), http.StatusOK)
		if got.Status != "cancelled" || got.Error == nil || got.Error.Code != "cancelled" || got.Error.Message != "cancelled by "+adminEmail+": duplicate of claim c-0" {
			t.Fatalf("cancelled run = %+v, error %+v", got, got.Error)
		}
		problem(t, e.call(t, "POST", path, e.admin, ""), http.StatusConflict, "run_finished")
		problem(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, resumeBody("d")), http.StatusConflict, "suspension_not_pending")
		problem(t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/steps/other/resume", e.admin, resumeBody("d")), http.StatusConflict, "run_finished")
		problem(t, e.call(t, "POST", "/api/v1/runs/no-such-run/cancel", e.admin, ""), http.StatusNotFound, "not_found")
		if got := e.suspension(t, s.ID); got.Status != "cancelled" || got.ResumedAt != nil {
			t.Errorf("suspension of the cancelled run = %+v", got)
		}
		events := decode[pageBody[eventBody]](t, e.call(t, "GET", "/api/v1/runs/"+run.ID+"/events", e.admin, ""), http.StatusOK).Items
		if last := events[len(events)-1]; last.Type != "RUN_CANCELLED" || !strings.Contains(string(last.Payload), `"reason":"duplicate of claim c-0"`) {
			t.Errorf("last event = %+v; want RUN_CANCELLED with the reason", last)
		}
		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "run.cancel"})
		var data struct {
			Reason string `json:"reason"`
		}
		if err != nil || len(entries) != 1 || json.Unmarshal(entries[0].Data, &data) != nil || data.Reason != "duplicate of claim c-0" {
			t.Errorf("the cancel's audit entries %+v (%v); want one with the reason", entries, err)
		}
		time.Sleep(100 * time.Millisecond)
		if got := e.run(t, run.ID); got.Status != "cancelled" || e.finished.Load() != 0 {
			t.Errorf("after cancel: run %s, resume step ran %d times", got.Status, e.finished.Load())
		}
	})
}

func TestAPIListSuspensions(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		var intakes []suspensionBody
		for i := range 3 {
			_, s := e.paused(t, "intake", map[string]string{"claimId": fmt.Sprint("c-", i)})
			intakes = append(intakes, s)
		}
		for range 2 {
			e.paused(t, "review", map[string]int{"amount": 1})
		}
		e.paused(t, "delay", map[string]int{"ms": int(time.Hour / time.Millisecond)})
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+intakes[0].ID+"/resume", e.admin, resumeBody("d")), http.StatusOK)

		list := func(query string) pageBody[suspensionBody] {
			t.Helper()
			return decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?"+query, e.admin, ""), http.StatusOK)
		}
		for query, n := range map[string]int{
			"":                                 6,
			"status=pending":                   5,
			"status=resumed":                   1,
			"status=cancelled":                 0,
			"reason=awaiting_approval":         2,
			"reason=delay":                     1,
			"kind=delay":                       1,
			"kind=input":                       3,
			"kind=approval&status=pending":     2,
			"workflowId=review":                2,
			"workflowId=intake&status=pending": 2,
			"runId=" + intakes[1].RunID:        1,
		} {
			got := list(query)
			if len(got.Items) != n {
				t.Errorf("?%s lists %d suspensions; want %d", query, len(got.Items), n)
			}
			q, _ := url.ParseQuery(query)
			for _, s := range got.Items {
				if v := q.Get("status"); v != "" && s.Status != v || q.Get("kind") != "" && s.Kind != q.Get("kind") ||
					q.Get("reason") != "" && s.Reason != q.Get("reason") || q.Get("workflowId") != "" && s.WorkflowID != q.Get("workflowId") {
					t.Errorf("?%s lists %+v", query, s)
				}
			}
		}
		for _, order := range []string{"", "oldest", "newest"} {
			var seen []suspensionBody
			cursor := ""
			for pages := 1; ; pages++ {
				query := "limit=2&cursor=" + url.QueryEscape(cursor)
				if order != "" {
					query += "&order=" + order
				}
				p := list(query)
				if len(p.Items) > 2 || pages > 4 {
					t.Fatalf("order=%s: page %d has %d items", order, pages, len(p.Items))
				}
				seen = append(seen, p.Items...)
				if cursor = p.NextCursor; cursor == "" {
					break
				}
			}
			ids := map[string]bool{}
			for i, s := range seen {
				if ids[s.ID] {
					t.Errorf("order=%s: %s listed twice", order, s.ID)
				}
				ids[s.ID] = true
				if i == 0 {
					continue
				}
				prev := seen[i-1].SuspendedAt
				if order == "newest" && s.SuspendedAt.After(prev) || order != "newest" && s.SuspendedAt.Before(prev) {
					t.Errorf("order=%s: %v listed after %v", order, s.SuspendedAt, prev)
				}
			}
			if len(ids) != 6 {
				t.Errorf("order=%s: paging listed %d suspensions; want 6", order, len(ids))
			}
		}
		for query, field := range map[string]string{
			"status=bogus":   "status",
			"kind=bogus":     "kind",
			"order=sideways": "order",
			"limit=0":        "limit",
			"limit=501":      "limit",
			"limit=ten":      "limit",
			"cursor=%21%21":  "cursor",
			"cursor=aGVsbG8": "cursor", // base64 of "hello"
		} {
			p := problem(t, e.call(t, "GET", "/api/v1/suspensions?"+query, e.admin, ""), http.StatusUnprocessableEntity, "validation_failed")
			if !hasParameter(p, field) {
				t.Errorf("?%s: errors %+v do not name %s", query, p.Errors, field)
			}
		}
	})
}

func TestAPIResumeBeforePause(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run := e.startRun(t, "early", nil)
		select {
		case id := <-e.entered:
			if id != run.ID {
				t.Fatalf("step entered for run %s; want %s", id, run.ID)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the step did not start")
		}
		path := "/api/v1/runs/" + run.ID + "/steps/prepare/resume"
		problem(t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/steps/bad$key/resume", e.admin, `{}`), http.StatusUnprocessableEntity, "validation_failed")
		problem(t, e.call(t, "POST", "/api/v1/runs/no-such-run/steps/prepare/resume", e.admin, `{}`), http.StatusNotFound, "not_found")

		// No document can have been uploaded to a pause still to come.
		p := problem(t, e.call(t, "POST", path, e.admin, `{"resumeData":{"documentIds":["made-up"]}}`), http.StatusUnprocessableEntity, "unknown_document")
		if !hasField(p, "/resumeData/documentIds/0") {
			t.Errorf("errors %+v do not name /resumeData/documentIds/0", p.Errors)
		}
		r := e.call(t, "POST", path, e.reviewer, `{"resumeData":{"callback":"early"}}`, "Idempotency-Key", "cb-1")
		early := decode[suspensionBody](t, r, http.StatusAccepted)
		if early.Status != "resumed" || early.StepKey != "prepare" || !sameJSON(t, early.ResumeData, json.RawMessage(`{"callback":"early"}`)) {
			t.Errorf("early resume = %s", r)
		}
		// Kept resumes are not suspensions anyone can see yet.
		problem(t, e.call(t, "GET", "/api/v1/suspensions/"+early.ID, e.admin, ""), http.StatusNotFound, "not_found")
		if p := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?runId="+run.ID, e.admin, ""), http.StatusOK); len(p.Items) != 0 {
			t.Errorf("pre-completed resume is listed: %+v", p.Items)
		}
		problem(t, e.call(t, "POST", path, e.admin, `{"resumeData":{"callback":"second"}}`), http.StatusConflict, "already_resumed")
		// The same request again, before the pause: the original answer too.
		if again := decode[suspensionBody](t, e.call(t, "POST", path, e.reviewer, `{"resumeData":{"callback":"early"}}`, "Idempotency-Key", "cb-1"), http.StatusAccepted); again.ID != early.ID {
			t.Errorf("early resume sent again before its pause = %+v", again)
		}
		problem(t, e.call(t, "POST", path, e.reviewer, `{"resumeData":{"callback":"other"}}`, "Idempotency-Key", "cb-1"), http.StatusConflict, "already_resumed")
		if got := e.run(t, run.ID); got.Status == "succeeded" || got.Status == "failed" {
			t.Fatalf("run finished while its step was blocked: %+v", got)
		}

		e.releaseEarly()
		done := e.waitRun(t, run.ID, "succeeded", "failed")
		if done.Status != "succeeded" || !sameJSON(t, done.Output, json.RawMessage(`{"saw":{"callback":"early"},"checkpoint":{"ref":"r-1"}}`)) {
			t.Fatalf("run = %+v, output %s", done, done.Output)
		}
		if len(done.Suspensions) != 1 {
			t.Fatalf("run has suspensions %+v; want the attached one", done.Suspensions)
		}
		s := done.Suspensions[0]
		if s.ID != early.ID || s.Status != "resumed" || s.Reason != "awaiting_callback" || *s.ResumedBy != reviewerEmail {
			t.Errorf("attached suspension = %+v", s)
		}
		events := decode[pageBody[eventBody]](t, e.call(t, "GET", "/api/v1/runs/"+run.ID+"/events", e.admin, ""), http.StatusOK).Items
		if !slices.ContainsFunc(events, func(ev eventBody) bool {
			return ev.Type == "RUN_RESUMED" && strings.Contains(string(ev.Payload), "resumedBeforePause")
		}) {
			t.Errorf("events lack the early RUN_RESUMED: %+v", events)
		}
		// The same request again, after the pause: the original answer.
		again := decode[suspensionBody](t, e.call(t, "POST", path, e.reviewer, `{"resumeData":{"callback":"early"}}`, "Idempotency-Key", "cb-1"), http.StatusOK)
		if again.ID != early.ID {
			t.Errorf("replayed early resume = %+v", again)
		}
	})
}

// The step-key resume path reaches pauses that already exist; it must apply
// the same checks as a resume by suspension id.
func TestAPIStepResumeOfExistingPause(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		p := problem(t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/steps/collect/resume", e.admin, `{"resumeData":{"receiptIds":[]}}`), http.StatusUnprocessableEntity, "validation_failed")
		if !hasField(p, "/resumeData/receiptIds") {
			t.Errorf("errors %+v do not name /resumeData/receiptIds", p.Errors)
		}
		e.stillPending(t, s)
		rv, r := e.paused(t, "review", map[string]int{"amount": 1})
		problem(t, e.call(t, "POST", "/api/v1/runs/"+rv.ID+"/steps/submit/resume", e.admin, `{"resumeData":{"approved":true}}`), http.StatusUnprocessableEntity, "validation_failed")
		e.stillPending(t, r)

		got := decode[suspensionBody](t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/steps/collect/resume", e.admin, resumeBody("d-1")), http.StatusOK)
		if got.ID != s.ID || got.Status != "resumed" {
			t.Errorf("step resume = %+v", got)
		}
		e.waitRun(t, run.ID, "succeeded")
	})
}

func TestAPIHealthAndMetrics(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		for path, status := range map[string]string{"/healthz": "ok", "/readyz": "ready"} {
			if got := decode[map[string]string](t, e.call(t, "GET", path, "", ""), http.StatusOK); got["status"] != status {
				t.Errorf("%s = %v", path, got)
			}
		}
		run, s := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, resumeBody("d")), http.StatusOK)
		e.waitRun(t, run.ID, "succeeded")
		e.paused(t, "review", map[string]int{"amount": 1})

		var text string
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := e.call(t, "GET", "/metrics", "", "")
			want(t, r, http.StatusOK)
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("metrics Content-Type = %q", ct)
			}
			// The histogram is observed just after the commit the run's status shows.
			if text = string(r.Body); strings.Contains(text, "tollgate_resume_latency_seconds_count 1\n") || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, line := range []string{
			`tollgate_runs{scope="database",status="succeeded"} 1`,
			`tollgate_runs{scope="database",status="suspended"} 1`,
			`tollgate_suspensions_pending{reason="awaiting_approval",scope="database"} 1`,
			`tollgate_resume_latency_seconds_bucket{le="+Inf"} 1`,
			`tollgate_resume_latency_seconds_count 1`,
			`tollgate_http_requests_total{code="200",route="GET /healthz"}`,
			`tollgate_http_requests_total{code="201",route="POST /api/v1/workflows/{workflowId}/runs"}`,
		} {
			if !strings.Contains(text, line+"\n") && !strings.Contains(text, line+" ") {
				t.Errorf("metrics lack %q:\n%s", line, text)
			}
		}
		for _, prefix := range []string{`tollgate_job_lag_seconds{scope="database"} `, "tollgate_resume_latency_seconds_bucket{le=", "# TYPE tollgate_resume_latency_seconds histogram",
			"go_goroutines ", "process_resident_memory_bytes ", "tollgate_http_request_duration_seconds_bucket{", "tollgate_workers ", "tollgate_workers_busy ",
			`tollgate_step_duration_seconds_count{workflow="intake"} `, `tollgate_step_failures_total{workflow="intake"} 0`} {
			if !strings.Contains(text, "\n"+prefix) {
				t.Errorf("metrics lack %q:\n%s", prefix, text)
			}
		}
		if strings.Contains(text, `reason="awaiting_documents"`) {
			t.Errorf("metrics count a resumed suspension as pending:\n%s", text)
		}

		for _, key := range []string{"", e.admin} {
			p := problem(t, e.call(t, "GET", "/api/v1/whatever", key, ""), http.StatusNotFound, "not_found")
			if p.Instance != "/api/v1/whatever" {
				t.Errorf("problem instance = %q", p.Instance)
			}
		}
		problem(t, e.call(t, "PATCH", "/api/v1/runs/"+run.ID, e.admin, ""), http.StatusMethodNotAllowed, "method_not_allowed")
		wfs := decode[pageBody[struct {
			ID    string   `json:"id"`
			Steps []string `json:"steps"`
		}]](t, e.call(t, "GET", "/api/v1/workflows", e.reviewer, ""), http.StatusOK)
		if len(wfs.Items) != e.workflows || wfs.Items[0].ID != "intake" || !slices.Equal(wfs.Items[0].Steps, []string{"collect", "finish"}) {
			t.Errorf("workflows = %+v", wfs.Items)
		}
	})
}

// A database whose schema is behind is not ready.
func TestAPIReadyzUnmigrated(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]func(t *testing.T) storage.Opts{
		"sqlite":   func(t *testing.T) storage.Opts { return storage.Opts{SQLitePath: t.TempDir() + "/tollgate.db"} },
		"postgres": func(t *testing.T) storage.Opts { return storage.Opts{URL: storagetest.NewDatabase(t)} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := openDB(t, o(t), false)
			e := &apiEnv{db: db}
			srv := &web.Server{Store: db, Auth: db, Health: db, Log: testLogger(t)}
			e.srv = newServer(t, srv)
			problem(t, e.call(t, "GET", "/readyz", "", ""), http.StatusServiceUnavailable, "migrations_pending")
			want(t, e.call(t, "GET", "/healthz", "", ""), http.StatusOK)
		})
	}
}

func TestAPIDelay(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		// A short delay is resumed by its timer.
		short := e.startRun(t, "delay", map[string]int{"ms": 50})
		done := e.waitRun(t, short.ID, "succeeded", "failed")
		if done.Status != "succeeded" || len(done.Suspensions) != 1 || *done.Suspensions[0].ResumedBy != "timer" || done.Suspensions[0].Kind != "delay" {
			t.Fatalf("short delay run = %+v", done)
		}
		// A long one can be cut short by an admin who confirms it; the
		// timer then finds it resumed.
		long, s := e.paused(t, "delay", map[string]int{"ms": int(time.Hour / time.Millisecond)})
		if s.Kind != "delay" || s.Reason != "delay" {
			t.Fatalf("delay suspension = %+v", s)
		}
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, `{"confirmMachineWait":true}`), http.StatusOK)
		done = e.waitRun(t, long.ID, "succeeded", "failed")
		if done.Status != "succeeded" || *done.Suspensions[0].ResumedBy == reviewerEmail || *done.Suspensions[0].ResumedBy == "timer" {
			t.Fatalf("woken delay run = %+v", done)
		}
	})
}

// A machine's wait (here a timer) is resumed by its machine: a reviewer
// who resumes it by hand is refused 403 machine_wait, an admin who does
// not confirm 422 confirmation_required naming /confirmMachineWait, and
// neither changes anything; an admin who confirms resumes it.
func TestAPIMachineWaitIsNotForPeople(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "delay", map[string]int{"ms": int(time.Hour / time.Millisecond)})
		path := "/api/v1/suspensions/" + s.ID + "/resume"
		problem(t, e.call(t, "POST", path, e.reviewer, `{"resumeData":{"early":true}}`), http.StatusForbidden, "machine_wait")
		problem(t, e.call(t, "POST", path, e.reviewer, `{"confirmMachineWait":true}`), http.StatusForbidden, "machine_wait")
		e.stillPending(t, s)
		p := problem(t, e.call(t, "POST", path, e.admin, `{}`), http.StatusUnprocessableEntity, "confirmation_required")
		if !hasField(p, "/confirmMachineWait") {
			t.Errorf("errors %+v; want /confirmMachineWait named", p.Errors)
		}
		e.stillPending(t, s)
		if got := e.run(t, run.ID); got.Status != "suspended" {
			t.Fatalf("run %s; want it still waiting", got.Status)
		}
		done := decode[suspensionBody](t, e.call(t, "POST", path, e.admin, `{"confirmMachineWait":true}`), http.StatusOK)
		if done.Status != "resumed" || done.ResumedBy == nil || *done.ResumedBy == reviewerEmail {
			t.Fatalf("confirmed resume = %+v; want it resumed by the admin", done)
		}
		e.waitRun(t, run.ID, "succeeded")
	})
}

// A path the API has, asked with a method it does not take, is 405 with
// the methods it takes in Allow; a path it does not have is 404.
func TestAPIWrongMethod(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		for _, c := range []struct{ method, path, allow string }{
			{"GET", "/api/v1/runs/some-run/cancel", "POST"},
			{"DELETE", "/api/v1/workflows", "GET, HEAD, POST"},
			{"PATCH", "/api/v1/runs/some-run", "GET, HEAD, DELETE"},
		} {
			r := e.call(t, c.method, c.path, e.admin, "")
			problem(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
			if got := r.Header.Get("Allow"); got != c.allow {
				t.Errorf("%s %s: Allow %q; want %q", c.method, c.path, got, c.allow)
			}
		}
		problem(t, e.call(t, "GET", "/api/v1/no-such-thing", e.admin, ""), http.StatusNotFound, "not_found")
	})
}

// A run's log is a list like every other: pages of limit events, each
// with the cursor of the next until the last, and together the whole log
// in order.
func TestAPIEventsArePaged(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run, _ := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		path := "/api/v1/runs/" + run.ID + "/events"
		all := decode[pageBody[eventBody]](t, e.call(t, "GET", path, e.admin, ""), http.StatusOK)
		if len(all.Items) < 3 || all.NextCursor != "" {
			t.Fatalf("the whole log: %d events, next %q; want at least 3 in one page", len(all.Items), all.NextCursor)
		}
		var got []int64
		cursor, pages := "", 0
		for {
			q := "?limit=2"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			p := decode[pageBody[eventBody]](t, e.call(t, "GET", path+q, e.admin, ""), http.StatusOK)
			pages++
			for _, ev := range p.Items {
				got = append(got, ev.Seq)
			}
			if p.NextCursor == "" {
				break
			}
			if len(p.Items) != 2 || pages > len(all.Items) {
				t.Fatalf("page %d: %d events with a next cursor", pages, len(p.Items))
			}
			cursor = p.NextCursor
		}
		for i, seq := range got {
			if seq != all.Items[i].Seq || i >= len(all.Items) {
				t.Fatalf("paged log %v; want the whole log's %d events in order", got, len(all.Items))
			}
		}
		if len(got) != len(all.Items) {
			t.Fatalf("paged log has %d events; want %d", len(got), len(all.Items))
		}
		p := problem(t, e.call(t, "GET", path+"?cursor=nope", e.admin, ""), http.StatusUnprocessableEntity, "validation_failed")
		if !hasParameter(p, "cursor") {
			t.Errorf("a bad cursor: %+v", p)
		}
		problem(t, e.call(t, "GET", "/api/v1/runs/no-such-run/events", e.admin, ""), http.StatusNotFound, "not_found")
	})
}
