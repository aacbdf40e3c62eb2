package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
)

// payoutSignOff is a declarative approval under a whole policy: two
// reviewers' approvals, one rejection with a reason, and neither the
// person who started the run nor the requester its input names may decide.
func payoutSignOff(t *testing.T) *domain.Workflow {
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
