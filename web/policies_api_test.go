package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/web"
)

// payoutSignOff is a declarative approval under a whole policy: two
// reviewers' approvals, one rejection with a reason, and neither the
// person who started the run nor the requester its input names may decide.
func payoutSignOff(t testing.TB) *domain.Workflow {
	t.Helper()
	_, wf, err := flow.Load([]byte(`{"id": "payout-sign-off", "version": "1", "steps": [
		{"type": "approval", "name": "sign-off", "title": "Payout sign-off",
		 "approvers": {"role": "reviewer"}, "quorum": 2, "rejections": 1,
		 "separationOfDuties": true, "requesterPointer": "/requester", "rejectRequiresComment": true}]}`), flow.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

type votedSuspension struct {
	suspensionBody
	Votes []domain.Vote `json:"votes"`
	Tally domain.Tally  `json:"tally"`
}

// Through the API: a vote is kept until the quorum, each person votes once,
// separation of duties refuses the starter and the requester, a rejection
// must say why, and the step receives the decision with every vote.
func TestAPIApprovalPolicy(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		second := e.addUser(t, "second.reviewer@example.com", domain.RoleReviewer, false)
		requester := e.addUser(t, "requester@example.com", domain.RoleReviewer, false)
		run := e.startRun(t, "payout-sign-off", map[string]string{"requester": "Requester@Example.com"})
		s := e.pendingOf(t, run.ID)
		path := "/api/v1/suspensions/" + s.ID

		for who, key := range map[string]string{"the starter": e.admin, "the requester": requester} {
			if p := problem(t, e.call(t, "POST", path+"/approve", key, `{}`), http.StatusForbidden, domain.CodeSeparationOfDuties); p.Detail == "" {
				t.Errorf("%s was refused without a reason", who)
			}
		}
		p := problem(t, e.call(t, "POST", path+"/reject", e.reviewer, `{"comment":" "}`), http.StatusUnprocessableEntity, domain.CodeValidation)
		if len(p.Errors) != 1 || p.Errors[0].Field != "/comment" {
			t.Errorf("a rejection without a comment: %+v; want the comment field named", p)
		}
		e.stillPending(t, s)

		first := decode[votedSuspension](t, e.call(t, "POST", path+"/approve", e.reviewer, `{"comment":"numbers check out"}`), http.StatusOK)
		if first.Status != "pending" || first.Tally != (domain.Tally{Approvals: 1, ApprovalsNeeded: 2, RejectionsNeeded: 1}) ||
			len(first.Votes) != 1 || first.Votes[0].Voter != reviewerEmail || first.Votes[0].Channel != domain.ChannelAPI {
			t.Fatalf("the first vote = %+v; want the approval pending at 1 of 2, with the vote", first)
		}
		problem(t, e.call(t, "POST", path+"/reject", e.reviewer, `{"comment":"on second thoughts"}`), http.StatusConflict, domain.CodeAlreadyVoted)
		got := decode[votedSuspension](t, e.call(t, "GET", path, e.admin, ""), http.StatusOK)
		if got.Status != "pending" || len(got.Votes) != 1 {
			t.Fatalf("after a second vote by the same person: %+v; want one vote, pending", got)
		}

		done := decode[votedSuspension](t, e.call(t, "POST", path+"/approve", second, `{}`), http.StatusOK)
		if done.Status != "resumed" || done.Decision != "approved" || len(done.Votes) != 2 || *done.ResumedBy != "second.reviewer@example.com" {
			t.Fatalf("the deciding vote = %+v; want approved by the second reviewer with both votes", done)
		}
		finished := e.waitRun(t, run.ID, "succeeded", "failed")
		var out domain.ApprovalData
		if err := json.Unmarshal(finished.Output, &out); err != nil || !out.Approved || len(out.Votes) != 2 || out.Votes[0].Comment != "numbers check out" {
			t.Fatalf("the run finished %s with %s; want the decision with both votes", finished.Status, finished.Output)
		}
	})
}

// In the web app: the request shows its tally and who voted; a reviewer
// who voted sees their vote and what it still waits for, not the buttons;
// the requester is told why they may not decide; the deciding vote ends it.
func TestUIApprovalPolicy(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, annPassword := e.addPerson(t, "ann@reviewers.example", domain.RoleReviewer)
		_, veraPassword := e.addPerson(t, "vera@reviewers.example", domain.RoleReviewer)
		run := e.startRun(t, "payout-sign-off", map[string]string{"requester": "vera@reviewers.example"})
		s := e.pendingOf(t, run.ID)
		path := "/suspensions/" + s.ID

		vera := e.browser(t)
		if p := vera.login("vera@reviewers.example", veraPassword); p.Status != http.StatusSeeOther {
			t.Fatalf("login = %d", p.Status)
		}
		p := vera.get(path)
		wantPage(t, p, http.StatusOK, "This request is about you, and it separates duties")
		if strings.Contains(p.Body, `value="approve"`) {
			t.Fatalf("the requester is offered a decision:\n%s", p.Body)
		}
		wantPage(t, vera.do("POST", path+"/decide", url.Values{"decision": {"approve"}}), http.StatusForbidden, "This request is about you")
		e.stillPending(t, s)

		ann := e.browser(t)
		if p := ann.login("ann@reviewers.example", annPassword); p.Status != http.StatusSeeOther {
			t.Fatalf("login = %d", p.Status)
		}
		p = ann.get(path)
		wantPage(t, p, http.StatusOK, "0 of 2 approvals", "(required to reject)", `value="approve"`)
		if p := ann.do("POST", path+"/decide", url.Values{"decision": {"reject"}}); p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, "must say why") {
			t.Fatalf("a rejection without a comment = %d:\n%s", p.Status, p.Body)
		}
		if p := ann.do("POST", path+"/decide", url.Values{"decision": {"approve"}, "comment": {"Looks right"}}); p.Status != http.StatusSeeOther {
			t.Fatalf("Ann's approval = %d:\n%s", p.Status, p.Body)
		}
		p = ann.get(path)
		wantPage(t, p, http.StatusOK, "1 of 2 approvals", "ann@reviewers.example", "Looks right", "You approved this", "waiting for 1 more approval")
		if strings.Contains(p.Body, `value="approve"`) {
			t.Fatalf("Ann is offered a second vote:\n%s", p.Body)
		}
		if p := ann.do("POST", path+"/decide", url.Values{"decision": {"reject"}, "comment": {"no"}}); p.Status != http.StatusConflict {
			t.Fatalf("Ann's second vote = %d:\n%s", p.Status, p.Body)
		}

		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/approve", e.reviewer, `{}`), http.StatusOK)
		e.waitRun(t, run.ID, "succeeded")
		wantPage(t, ann.get(path), http.StatusOK, "Approved by", "2 of 2 approvals")
	})
}

type answeredWithNext struct {
	votedSuspension
	Next *struct {
		RunID   string           `json:"runId"`
		Status  string           `json:"status"`
		Request *suspensionBody  `json:"request"`
		ForYou  bool             `json:"forYou"`
		Output  json.RawMessage  `json:"output"`
		Error   *domain.RunError `json:"error"`
	} `json:"next"`
}

// With ?wait=, a decision or resume answers with what the run did next:
// its next request and whether it is the caller's, its result, or its
// failure. Without it, the answer is as before.
func TestAPIDecisionAnswersWhatHappenedNext(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		_, a := e.paused(t, "review", map[string]int{"amount": 5})
		for _, bad := range []string{"soon", "-1s", "31s"} {
			p := problem(t, e.call(t, "POST", "/api/v1/suspensions/"+a.ID+"/approve?wait="+bad, e.reviewer, `{}`), http.StatusBadRequest, web.CodeInvalidQuery)
			if len(p.Errors) != 1 || p.Errors[0].Parameter != "wait" {
				t.Errorf("wait=%s: %+v; want the wait parameter named", bad, p)
			}
		}
		e.stillPending(t, a)
		ok := decode[answeredWithNext](t, e.call(t, "POST", "/api/v1/suspensions/"+a.ID+"/approve?wait=5s", e.reviewer, `{}`), http.StatusOK)
		if ok.Status != "resumed" || ok.Next == nil || ok.Next.Status != "succeeded" || !sameJSON(t, ok.Next.Output, json.RawMessage(`{"paid":{"amount":5}}`)) {
			t.Fatalf("approve?wait = %+v, next %+v; want the run's result", ok, ok.Next)
		}

		_, r := e.paused(t, "review", map[string]int{"amount": 6})
		no := decode[answeredWithNext](t, e.call(t, "POST", "/api/v1/suspensions/"+r.ID+"/reject?wait=5s", e.reviewer, `{"comment":"no"}`), http.StatusOK)
		if no.Next == nil || no.Next.Status != "failed" || no.Next.Error == nil || no.Next.Error.Code != domain.CodeRejected {
			t.Fatalf("reject?wait: next %+v; want the run's failure", no.Next)
		}

		// The founder's own note leads to an approval the founder may not
		// decide; a reviewer's resume of the same note leads to one they may.
		for _, tc := range []struct {
			who    string
			key    string
			forYou bool
		}{{"the founder", e.founderA, false}, {"a reviewer", e.reviewer, true}} {
			run := decode[startedRun](t, e.call(t, "POST", "/api/v1/workflows/founder-doc/runs", e.founderA, `{"input":{"email":"`+founderAEmail+`"}}`), http.StatusCreated)
			note := e.pendingOf(t, run.ID)
			got := decode[answeredWithNext](t, e.call(t, "POST", "/api/v1/suspensions/"+note.ID+"/resume?wait=5s", tc.key, `{"resumeData":{"n":1}}`), http.StatusOK)
			if got.Next == nil || got.Next.Status != "suspended" || got.Next.Request == nil || got.Next.Request.Kind != "approval" || got.Next.ForYou != tc.forYou {
				t.Fatalf("%s resumes the note: next %+v; want the approval, for them: %v", tc.who, got.Next, tc.forYou)
			}
		}

		_, plain := e.paused(t, "review", map[string]int{"amount": 7})
		if body := e.call(t, "POST", "/api/v1/suspensions/"+plain.ID+"/approve", e.reviewer, `{}`); strings.Contains(string(body.Body), `"next"`) {
			t.Fatalf("an approval without wait answers %s", body.Body)
		}
	})
}

// In the web app, a person whose action leads the run to another request
// of theirs is taken there; otherwise the request says what the run did.
func TestUIActionLeadsToWhatHappenedNext(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, password := e.addPerson(t, "rex@reviewers.example", domain.RoleReviewer)
		b := e.browser(t)
		if p := b.login("rex@reviewers.example", password); p.Status != http.StatusSeeOther {
			t.Fatalf("login = %d", p.Status)
		}
		run := decode[startedRun](t, e.call(t, "POST", "/api/v1/workflows/founder-doc/runs", e.founderA, `{"input":{"email":"`+founderAEmail+`"}}`), http.StatusCreated)
		note := e.pendingOf(t, run.ID)
		loc := location(t, b.do("POST", "/suspensions/"+note.ID+"/resume", url.Values{"resumeData": {`{"note":"here"}`}}))
		approval := e.pendingOf(t, run.ID)
		if want := "/suspensions/" + approval.ID + "?done=resumed&then=yours&prev=" + note.ID; loc != want {
			t.Fatalf("the resume led to %q; want the run's approval, %q", loc, want)
		}
		wantPage(t, b.get(loc), http.StatusOK, "Resumed. The run now asks this of you.", `value="approve"`)
		loc = location(t, b.do("POST", "/suspensions/"+approval.ID+"/decide", url.Values{"decision": {"reject"}, "comment": {"incomplete"}}))
		if want := "/suspensions/" + approval.ID + "?done=rejected&then=failed"; loc != want {
			t.Fatalf("the rejection led to %q; want %q", loc, want)
		}
		wantPage(t, b.get(loc), http.StatusOK, "Rejected. The run has failed; its page says why.")
	})
}

// A request with a deadline ladder says what comes next and when, on its
// page, in the inbox and through the API.
func TestLadderIsShown(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run := e.startRun(t, "escalating", map[string]string{})
		s := e.pendingOf(t, run.ID)
		got := decode[struct {
			suspensionBody
			Escalated        int        `json:"escalated"`
			NextEscalationAt *time.Time `json:"nextEscalationAt"`
			Policy           struct {
				Escalation []domain.Rung `json:"escalation"`
			} `json:"policy"`
		}](t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID, e.admin, ""), http.StatusOK)
		if got.Escalated != 0 || got.NextEscalationAt == nil || !got.NextEscalationAt.Equal(got.SuspendedAt.Add(48*time.Hour)) || len(got.Policy.Escalation) != 2 {
			t.Fatalf("the API shows %+v; want the next rung two days after the request", got)
		}
		_, password := e.addPerson(t, "rhea@reviewers.example", domain.RoleReviewer)
		b := e.browser(t)
		if p := b.login("rhea@reviewers.example", password); p.Status != http.StatusSeeOther {
			t.Fatalf("login = %d", p.Status)
		}
		wantPage(t, b.get("/suspensions/"+s.ID), http.StatusOK, "Escalates to admins in 2 days")
		wantPage(t, b.get("/inbox"), http.StatusOK, "Escalates to admins in 2 days")
	})
}

// escalating is an approval that goes to admins after two days and is
// rejected after three.
func escalating(t testing.TB) *domain.Workflow {
	t.Helper()
	_, wf, err := flow.Load([]byte(`{"id": "escalating", "version": "1", "steps": [
		{"type": "approval", "name": "sign-off", "title": "Escalating sign-off", "approvers": {"role": "reviewer"},
		 "escalation": [
		   {"afterMs": 172800000, "addApprovers": {"role": "admin"}},
		   {"afterMs": 259200000, "outcome": "reject", "comment": "No decision within 3 days"}]}]}`), flow.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return wf
}
