package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// finishWith is a step that ends its run with the resume data it got.
func finishWith(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
	var p domain.ResumePayload
	if err := req.Bind(&p); err != nil {
		return domain.StepResult{}, err
	}
	return domain.StepResult{Output: p.ResumeData}, nil
}

// settleWorkflow waits for whichever comes first of a payment's call, a
// week, or an admin's waiver.
func settleWorkflow() *domain.Workflow {
	return domain.NewWorkflow("settle", "1").
		Step("wait", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.WaitAny("settle", nil, "settled",
				domain.Branch("paid", domain.Suspend("paid", nil, "", domain.WithKind(domain.KindWebhook), domain.WithTitle("Payment received", ""))),
				domain.Branch("expire", domain.Sleep(7*24*time.Hour, nil, "")),
				domain.Branch("waive", domain.Review("waive", nil, domain.WithApprovers(domain.RoleAdmin), domain.WithTitle("Waive the payment", "Settle without the bank's confirmation."))),
			)}}, nil
		}).
		Step("settled", finishWith)
}

// papersWorkflow waits for three documents, all of them.
func papersWorkflow() *domain.Workflow {
	doc := func(name, title string) domain.Command {
		return domain.Branch(name, domain.Suspend(name, nil, "", domain.WithTitle(title, "Upload it or paste its reference.")))
	}
	return domain.NewWorkflow("papers", "1").
		Step("wait", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.WaitAll("papers", nil, "filed",
				doc("id", "Passport or ID card"), doc("proof", "Proof of address"), doc("contract", "Signed contract"))}}, nil
		}).
		Step("filed", finishWith)
}

// branchesByName reads a run's branches from the API.
func branchesByName(t *testing.T, e *apiEnv, runID string) map[string]suspensionBody {
	t.Helper()
	page := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?runId="+runID, e.admin, ""), http.StatusOK)
	out := map[string]suspensionBody{}
	for _, s := range page.Items {
		out[s.Branch] = s
	}
	return out
}

// Through the API and the web app: an any group's branches are requests
// of their own; the first decision wins, the others answer 410 and leave
// the inbox, and the step gets the winner's name and data. An all group
// waits for its last branch, and its run page counts them.
func TestAPIWaitGroups(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run := e.startRun(t, "settle", nil)
		e.waitRun(t, run.ID, "suspended")
		b := branchesByName(t, e, run.ID)
		if len(b) != 3 || b["waive"].Group != "any" || b["waive"].GroupKey != "wait" || b["paid"].Kind != "webhook" {
			t.Fatalf("branches %+v; want paid, expire and waive of any group wait", b)
		}
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+b["waive"].ID+"/approve", e.admin, `{"comment":"Paid in cash"}`), http.StatusOK)
		p := problem(t, e.call(t, "POST", "/api/v1/suspensions/"+b["paid"].ID+"/resume", e.admin, `{"resumeData":{"ref":"TX-1"}}`), http.StatusGone, domain.CodeBranchNotTaken)
		if p.Detail == "" {
			t.Error("the branch not taken was refused without a reason")
		}
		done := e.waitRun(t, run.ID, "succeeded")
		var out struct {
			Winner string              `json:"winner"`
			Output domain.ApprovalData `json:"output"`
		}
		if err := json.Unmarshal(done.Output, &out); err != nil || out.Winner != "waive" || !out.Output.Approved || out.Output.Comment != "Paid in cash" {
			t.Fatalf("output %s (%v); want the waiver to win with its decision", done.Output, err)
		}
		b = branchesByName(t, e, run.ID)
		if b["paid"].Status != "cancelled" || b["expire"].Status != "cancelled" {
			t.Fatalf("branches after the waiver: %+v; want the others cancelled", b)
		}
		pending := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?status=pending&runId="+run.ID, e.admin, ""), http.StatusOK)
		if len(pending.Items) != 0 {
			t.Fatalf("%d requests of the settled run still pending", len(pending.Items))
		}

		papers := e.startRun(t, "papers", nil)
		e.waitRun(t, papers.ID, "suspended")
		b = branchesByName(t, e, papers.ID)
		for _, name := range []string{"contract", "id"} {
			want(t, e.call(t, "POST", "/api/v1/suspensions/"+b[name].ID+"/resume", e.reviewer, `{"resumeData":{"ref":"`+name+`"}}`), http.StatusOK)
		}
		if r := e.waitRun(t, papers.ID, "suspended"); r.Status != "suspended" {
			t.Fatalf("the run is %s with one of three documents to come", r.Status)
		}
		_, password := e.addPerson(t, "grace@example.com", domain.RoleReviewer)
		br := e.browser(t)
		if p := br.login("grace@example.com", password); p.Status != http.StatusSeeOther {
			t.Fatalf("login = %d", p.Status)
		}
		wantPage(t, br.get("/runs/"+papers.ID), http.StatusOK, "2 of 3 done", "Proof of address", "waiting")
		wantPage(t, br.get("/suspensions/"+b["proof"].ID), http.StatusOK, "one of several things the run waits for")
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+b["proof"].ID+"/resume", e.reviewer, `{"resumeData":{"ref":"proof"}}`), http.StatusOK)
		filed := e.waitRun(t, papers.ID, "succeeded")
		if !sameJSON(t, filed.Output, json.RawMessage(`{"id":{"ref":"id"},"proof":{"ref":"proof"},"contract":{"ref":"contract"}}`)) {
			t.Fatalf("output %s; want every document's data by name", filed.Output)
		}
	})
}

// settleBySignalDoc waits for a payment or a waiver, then for a receipt,
// then for the file to be archived, each signal a branch of an any group
// with a timer that gives up.
const settleBySignalDoc = `{"id": "settle-by-signal", "version": "1", "steps": [
	{"type": "any", "name": "settle", "of": [{"type": "signal", "name": "payment"}, {"type": "signal", "name": "waiver"}]},
	{"type": "any", "name": "file", "of": [{"type": "signal", "name": "receipt"}, {"type": "wait", "name": "give-up", "durationMs": 3600000}]},
	{"type": "any", "name": "close", "of": [{"type": "signal", "name": "archive"}, {"type": "wait", "name": "give-up", "durationMs": 3600000}]}]}`

// A signal for a branch of an any group that another branch won is
// refused 410 branch_not_taken with problem details, by name as by step
// key, while the run waits on and after it ends; a signal for a wait the
// run has not reached is still kept (202) and taken when it gets there.
func TestSignalToBranchNotTaken(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withFlows, func(t *testing.T, e *apiEnv) {
		want(t, e.call(t, "PUT", "/api/v1/workflows/settle-by-signal/versions/1", e.admin, settleBySignalDoc), http.StatusCreated)
		run := e.startRun(t, "settle-by-signal", nil)
		e.waitRun(t, run.ID, "suspended")
		signals := "/api/v1/runs/" + run.ID + "/signals"
		want(t, e.call(t, "POST", signals, e.admin, `{"name":"waiver","signalId":"w-1"}`), http.StatusOK)
		eventually(t, "the pause on the receipt", func() bool { return branchesByName(t, e, run.ID)["receipt"].Status == "pending" })
		payment := branchesByName(t, e, run.ID)["payment"]
		if payment.Status != "cancelled" {
			t.Fatalf("the payment branch is %s after the waiver won; want cancelled", payment.Status)
		}
		notTaken := func(what, body string) {
			t.Helper()
			r := e.call(t, "POST", signals, e.admin, body)
			p := problem(t, r, http.StatusGone, domain.CodeBranchNotTaken)
			var extra struct{ Branch, Group string }
			if err := json.Unmarshal(r.Body, &extra); err != nil || p.Detail == "" || extra.Branch != "payment" || extra.Group != payment.GroupKey {
				t.Errorf("%s: %s; want the branch and its group named, and why", what, r)
			}
		}
		notTaken("by name", `{"name":"payment","signalId":"p-1","payload":{"cents":500}}`)
		notTaken("by step key", `{"name":"payment","signalId":"p-2","stepId":"`+payment.StepKey+`"}`)
		type signalBody struct{ Status string }
		if s := decode[signalBody](t, e.call(t, "POST", signals, e.admin, `{"name":"archive","signalId":"a-1"}`), http.StatusAccepted); s.Status != "kept" {
			t.Errorf("a signal for a wait still to come: %+v; want kept", s)
		}
		want(t, e.call(t, "POST", signals, e.admin, `{"name":"receipt","signalId":"r-1"}`), http.StatusOK)
		done := e.waitRun(t, run.ID, "succeeded")
		var out struct{ Winner string }
		if err := json.Unmarshal(done.Output, &out); err != nil || out.Winner != "archive" {
			t.Errorf("output %s; want the kept archive signal to have closed the run", done.Output)
		}
		notTaken("after the run ended", `{"name":"payment","signalId":"p-3"}`)
	})
}
