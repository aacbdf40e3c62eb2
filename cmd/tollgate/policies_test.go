package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// addReviewer creates a reviewer with the user and apikey commands, on
// the database env names, and returns the key.
func addReviewer(t *testing.T, env map[string]string, email string, userArgs ...string) string {
	t.Helper()
	env = cloneEnv(env)
	env["TOLLGATE_PASSWORD"] = "a long enough password for tests"
	tool := func(args ...string) string {
		var out bytes.Buffer
		if err := run(t.Context(), args, envFunc(env), &out, &out); err != nil {
			t.Fatalf("tollgate %v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	tool(append([]string{"user", "add", "--email", email, "--role", "reviewer"}, userArgs...)...)
	m := regexp.MustCompile(`\(shown once\): (tg_\S+)`).FindStringSubmatch(tool("apikey", "create", "--email", email))
	if m == nil {
		t.Fatal("apikey create printed no key")
	}
	return m[1]
}

// Two servers share one PostgreSQL; three reviewers vote at once, through
// both, on approvals that two approvals decide. Each round ends with
// exactly one resolution and the two votes that counted; the third voter
// hears the request was decided, and the step after it runs once.
func TestQuorumAcrossServers(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": storagetest.NewDatabase(t)}
	servers := []*testServer{startServer(t, env), startServer(t, env)}
	admin := servers[0].client()
	admin.register(t, `{"id": "two-approvals", "version": "1", "steps": [
		{"type": "approval", "name": "sign-off", "approvers": {"role": "reviewer"}, "quorum": 2}]}`)
	voters := make([]*client, 3)
	for i := range voters {
		c := servers[i%2].client()
		c.key = addReviewer(t, env, fmt.Sprintf("reviewer-%d@example.com", i))
		voters[i] = c
	}
	for round := range 5 {
		run := admin.startRun(t, "two-approvals", map[string]int{"round": round})
		admin.waitStatus(t, run.ID, "suspended")
		ss := admin.suspensions(t, "runId="+run.ID+"&status=pending")
		if len(ss) != 1 {
			t.Fatalf("round %d: pending %+v", round, ss)
		}
		codes := make([]string, len(voters))
		var wg sync.WaitGroup
		for i, c := range voters {
			wg.Go(func() {
				r, err := c.do(context.Background(), "POST", "/api/v1/suspensions/"+ss[0].ID+"/approve", map[string]string{})
				switch {
				case err != nil:
					codes[i] = err.Error()
				case r.Status == http.StatusOK:
					var s apiSuspension
					r.decode(t, &s)
					codes[i] = s.Status
				default:
					codes[i] = r.code()
				}
			})
		}
		wg.Wait()
		count := map[string]int{}
		for _, c := range codes {
			count[c]++
		}
		if count["pending"] != 1 || count["resumed"] != 1 || count["already_resumed"] != 1 {
			t.Fatalf("round %d: the votes got %v; want one kept, one deciding, one too late", round, codes)
		}
		admin.waitStatus(t, run.ID, "succeeded")
		var got struct {
			Votes []struct{ Voter string } `json:"votes"`
		}
		admin.call(t, http.StatusOK, "GET", "/api/v1/suspensions/"+ss[0].ID, nil).decode(t, &got)
		if len(got.Votes) != 2 {
			t.Fatalf("round %d: %d votes kept; want 2", round, len(got.Votes))
		}
		if n := checkLog(t, admin.events(t, run.ID)); n["STEP_COMPLETED(sign-off)"] != 1 || n["RUN_SUCCEEDED"] != 1 {
			t.Fatalf("round %d: events %v", round, n)
		}
	}
}

// A ladder's rungs are rows, not timers in a process: a server stopped
// before they are due leaves them to the server that starts next, which
// fires each once, in order.
func TestLadderSurvivesRestart(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		data := t.TempDir()
		first := startServer(t, env, "--data", data)
		c := first.client()
		c.register(t, `{"id": "late", "version": "1", "steps": [
			{"type": "approval", "name": "sign-off", "approvers": {"role": "reviewer"}, "escalation": [
				{"afterMs": 1500, "addApprovers": {"emails": ["cfo@example.com"]}},
				{"afterMs": 2500, "outcome": "reject", "comment": "Nobody decided in time"}]}]}`)
		run := c.startRun(t, "late", map[string]any{})
		c.waitStatus(t, run.ID, "suspended")
		if err := first.stop(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		second := startServer(t, env, "--data", data)
		c = second.client()
		done := c.waitStatus(t, run.ID, "failed")
		if done.Error == nil || done.Error.Code != "rejected" {
			t.Fatalf("the run ended %+v; want rejected by the ladder", done.Error)
		}
		var s struct {
			ResumedBy string   `json:"resumedBy"`
			Escalated int      `json:"escalated"`
			Approvers []string `json:"approvers"`
		}
		ss := c.suspensions(t, "runId="+run.ID)
		c.call(t, http.StatusOK, "GET", "/api/v1/suspensions/"+ss[0].ID, nil).decode(t, &s)
		if s.ResumedBy != "escalation" || s.Escalated != 2 || len(s.Approvers) != 1 || s.Approvers[0] != "cfo@example.com" {
			t.Fatalf("the request ended %+v; want both rungs fired once, the last deciding", s)
		}
		if n := checkLog(t, c.events(t, run.ID)); n["REQUEST_ESCALATED"] != 2 {
			t.Fatalf("events %v; want two rungs", n)
		}
	})
}

// With SMTP configured, a decision link is mailed to its person, and the
// link in the mail opens the request. Mail and page say who asks, by name,
// and for which organisation, and give the person outside it no email
// from inside: not the asker's, nor the requester's among the fields.
func TestDecisionLinkIsMailed(t *testing.T) {
	t.Parallel()
	const public = "https://tollgate.example.com"
	smtp := startSMTPServer(t)
	dir := t.TempDir()
	env := map[string]string{"TOLLGATE_SMTP_URL": smtp.URL, "TOLLGATE_SMTP_FROM": "Tollgate <tollgate@example.com>", "TOLLGATE_DATA": dir}
	s := startServer(t, env, "--data", dir, "--public-url", public, "--organisation", "Northwind Ltd")
	c, rita := s.client(), s.client()
	rita.key = addReviewer(t, env, "rita@example.com", "--name", "Rita Ops")
	c.register(t, `{"id": "vendor-terms", "version": "1", "steps": [{"type": "approval", "name": "terms", "title": "Accept the revised terms",
		"display": {"fields": [{"label": "Requested by", "value": "/input/requestedBy", "format": "email"}, {"label": "Vendor contact", "value": "/input/contact", "format": "email"}]}}]}`)
	run := c.startRun(t, "vendor-terms", map[string]any{"requestedBy": "Rita@Example.com", "contact": "partner@vendor.example"})
	c.waitStatus(t, run.ID, "suspended")
	ss := c.suspensions(t, "runId="+run.ID+"&status=pending")
	var made struct {
		URL    string `json:"url"`
		Mailed bool   `json:"mailed"`
	}
	rita.call(t, http.StatusCreated, "POST", "/api/v1/suspensions/"+ss[0].ID+"/links", map[string]string{"email": "partner@vendor.example"}).decode(t, &made)
	if !made.Mailed || !strings.HasPrefix(made.URL, public+"/links/") {
		t.Fatalf("made %+v; want a mailed link on the public URL", made)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, m := range smtp.Messages() {
			if len(m.To) == 1 && m.To[0] == "partner@vendor.example" {
				if m.Header.Get("Subject") != "[Northwind Ltd] Rita Ops asks for your decision: Accept the revised terms" || !strings.Contains(m.Text, made.URL) ||
					!strings.Contains(m.Text, "Rita Ops at Northwind Ltd asks you to decide a request: Accept the revised terms") || strings.Contains(strings.ToLower(m.Text), "rita@") {
					t.Fatalf("the link's mail: %q\n%s", m.Header.Get("Subject"), m.Text)
				}
				body := getPage(t, s.URL+strings.TrimPrefix(made.URL, public))
				for _, want := range []string{"Accept the revised terms", "Rita Ops at Northwind Ltd asks you to approve or reject this request.", "<dd><span>Rita Ops</span></dd>", "partner@vendor.example"} {
					if !strings.Contains(body, want) {
						t.Fatalf("the mailed link's page lacks %q:\n%s", want, body)
					}
				}
				if strings.Contains(strings.ToLower(body), "rita@") {
					t.Fatalf("the link's page shows the requester's email to a person outside:\n%s", body)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no mail to the link's person; mails: %d", len(smtp.Messages()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The shipped vendor-payout example, end to end on the embedded database:
// the requester may not sign off their own payout, two reviewers do, and
// then the bank's call to the paid branch's resume URL wins the any-of
// wait: the waiver it no longer needs answers 410, and the run finishes
// with the winner and the call.
func TestVendorPayoutExample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"TOLLGATE_DATA": dir}
	srv := startServer(t, env, "--data", dir)
	admin := srv.client()
	keys := map[string]string{}
	for _, who := range []string{"rita@example.com", "first@example.com", "second@example.com"} {
		keys[who] = addReviewer(t, env, who)
	}
	as := func(who string) *client {
		c := srv.client()
		c.key = keys[who]
		return c
	}
	run := admin.startRun(t, "vendor-payout", map[string]any{"vendor": "Acme Ltd", "invoiceId": "INV-204", "amount": 1820, "requestedBy": "Rita@Example.com"})
	admin.waitStatus(t, run.ID, "suspended")
	signOff := admin.suspensions(t, "runId="+run.ID+"&status=pending")
	if len(signOff) != 1 || signOff[0].Title != "Pay Acme Ltd — invoice INV-204" {
		t.Fatalf("pending %+v; want the sign-off titled for the invoice", signOff)
	}
	approve := func(c *client, id string, comment string) response {
		r, err := c.do(t.Context(), "POST", "/api/v1/suspensions/"+id+"/approve", map[string]string{"comment": comment})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := approve(as("rita@example.com"), signOff[0].ID, "mine"); r.Status != http.StatusForbidden || r.code() != "separation_of_duties" {
		t.Fatalf("the requester's own approval = %d %s; want 403 separation_of_duties", r.Status, r.code())
	}
	for _, who := range []string{"first@example.com", "second@example.com"} {
		if r := approve(as(who), signOff[0].ID, "Matches the purchase order"); r.Status != http.StatusOK {
			t.Fatalf("%s's approval = %d %s", who, r.Status, r.Body)
		}
	}
	var branches map[string]apiSuspension
	deadline := time.Now().Add(20 * time.Second)
	for len(branches) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the any-of wait's branches never came: %+v", branches)
		}
		branches = map[string]apiSuspension{}
		for _, s := range admin.suspensions(t, "runId="+run.ID+"&status=pending") {
			branches[s.Branch] = s
		}
		time.Sleep(50 * time.Millisecond)
	}
	paid := branches["paid"]
	if paid.ResumeURL == "" || branches["expire"].WakeAt == nil || branches["waive"].Kind != "approval" {
		t.Fatalf("branches %+v; want paid with a resume URL, a timer and the waiver", branches)
	}
	resp, err := http.Post(paid.ResumeURL, "application/json", strings.NewReader(`{"bankReference":"TX-991"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the bank's call = %d", resp.StatusCode)
	}
	if r := approve(admin, branches["waive"].ID, "settled by hand"); r.Status != http.StatusGone || r.code() != "branch_not_taken" {
		t.Fatalf("the waiver after the payment = %d %s; want 410 branch_not_taken", r.Status, r.code())
	}
	done := admin.waitStatus(t, run.ID, "succeeded")
	var out struct {
		Winner string `json:"winner"`
		Output struct {
			Body map[string]string `json:"body"`
		} `json:"output"`
	}
	if err := json.Unmarshal(done.Output, &out); err != nil || out.Winner != "paid" || out.Output.Body["bankReference"] != "TX-991" {
		t.Fatalf("output %s (%v); want the bank's call to win", done.Output, err)
	}
}

// On a fresh install the admin is the only person, and the admin who
// starts a vendor payout may not sign it off: nobody may decide it. The
// request says so in the run's log, but it is not rejected the moment it
// is asked with "No decision within 3 days": its ladder's reminder keeps
// its time, a day away.
func TestVendorPayoutOnAFreshInstall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startServer(t, map[string]string{"TOLLGATE_DATA": dir}, "--data", dir)
	admin := srv.client()
	run := admin.startRun(t, "vendor-payout", map[string]any{"vendor": "Acme Ltd", "invoiceId": "INV-204", "amount": 1820, "requestedBy": "rita@example.com"})
	admin.waitStatus(t, run.ID, "suspended")
	// Long enough for a ladder that climbs at once to reach its end.
	time.Sleep(time.Second)
	if got := admin.run(t, run.ID); got.Status != "suspended" {
		t.Fatalf("the run is %s; want it waiting for its sign-off", got.Status)
	}
	pending := admin.suspensions(t, "runId="+run.ID+"&status=pending")
	if len(pending) != 1 || pending[0].Title != "Pay Acme Ltd — invoice INV-204" {
		t.Fatalf("pending %+v; want the sign-off still waiting", pending)
	}
	types := eventTypes(admin.events(t, run.ID))
	if !strings.Contains(types, "REQUEST_UNDECIDABLE") || strings.Contains(types, "REQUEST_ESCALATED") {
		t.Fatalf("events %s; want the log to say nobody may decide, and no rung fired", types)
	}
}
