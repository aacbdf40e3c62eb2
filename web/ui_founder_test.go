package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// contractFlow asks its input's assignee for a signed contract as a PDF,
// with a title, fields, instructions and a deadline (input deadlineMs,
// three days by default), and completes with what was sent. Its fields
// include a link (input termSheet) and a value the input may leave empty
// (coInvestor). Its step
// name and checkpoint are engine words a founder must never see.
func contractFlow() *domain.Workflow {
	return domain.NewWorkflow("contract-flow", "1").
		Step("requestSignature", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				Assignee   string  `json:"assignee"`
				Company    string  `json:"company"`
				Amount     float64 `json:"amount"`
				TermSheet  string  `json:"termSheet"`
				CoInvestor string  `json:"coInvestor"`
				DeadlineMS int64   `json:"deadlineMs"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			c := domain.Suspend("awaiting_signature", map[string]string{"internalRef": "ckpt-7f3a"}, "fileContract",
				domain.WithAssignee(in.Assignee), domain.WithDocuments("application/pdf"),
				domain.WithTitle("Signed contract for "+in.Company, "Upload a PDF of your signed contract."),
				domain.WithPresentation(domain.Presentation{ReasonLabel: "Signature needed", Fields: []domain.Field{
					domain.NewField("Company", in.Company, domain.FormatText),
					domain.NewField("Investment", in.Amount, "money:EUR"),
					domain.NewField("Sign by", "2026-03-05", domain.FormatDate),
					domain.NewField("Term sheet", in.TermSheet, domain.FormatURL),
					domain.NewField("Co-investor", in.CoInvestor, domain.FormatText),
				}}))
			c.Delay = 72 * time.Hour
			if in.DeadlineMS > 0 {
				c.Delay = time.Duration(in.DeadlineMS) * time.Millisecond
			}
			return domain.StepResult{Commands: []domain.Command{c}}, nil
		}).
		Step("fileContract", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in domain.ResumePayload
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Complete(in.ResumeData)}}, nil
		})
}

// contractInput is contractFlow's input for a founder.
func contractInput(assignee, company string) map[string]any {
	return map[string]any{"assignee": assignee, "company": company, "amount": 250000, "termSheet": "https://docs.example/term-sheets/acme"}
}

// noEngineWords fails when a founder's page shows what needs knowledge of
// workflows: ids, step names, the checkpoint, JSON or technical details.
func noEngineWords(t *testing.T, p page, runID string) {
	t.Helper()
	for _, w := range []string{runID, "requestSignature", "fileContract", "contract-flow", "ckpt-7f3a", "internalRef", "Checkpoint", "checkpoint",
		"Technical details", "awaiting_signature", "Resume data", `{"`, "sha256"} {
		if strings.Contains(p.Body, w) {
			t.Errorf("a founder's page shows %q:\n%s", w, p.Body)
		}
	}
}

func TestUIFounderMyRequestsListsLinks(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		const ada = "ada@founders.example"
		_, contract := e.paused(t, "contract-flow", contractInput(ada, "Acme Robotics"))
		_, docs := e.paused(t, "paperwork", map[string]string{"assignee": ada})
		_, form := e.paused(t, "intake", map[string]string{"claimId": "c-1", "assignee": ada})
		answered, done := e.paused(t, "intake", map[string]string{"claimId": "c-2", "assignee": ada})
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+done.ID+"/resume", e.admin, resumeBody("r-1")), http.StatusOK)
		e.waitRun(t, answered.ID, "succeeded")
		withdrawn, cancelled := e.paused(t, "paperwork", map[string]string{"assignee": ada})
		want(t, e.call(t, "POST", "/api/v1/runs/"+withdrawn.ID+"/cancel", e.admin, ""), http.StatusOK)
		lapsed := e.startRun(t, "contract-flow", map[string]any{"assignee": ada, "company": "Late Ltd", "deadlineMs": 1})
		e.waitRun(t, lapsed.ID, "succeeded")
		_, others := e.paused(t, "contract-flow", contractInput("bob@founders.example", "Bob's Bikes"))

		a := e.signedIn(t, ada, domain.RoleFounder)
		p := a.get("/my")
		wantPage(t, p, http.StatusOK,
			`<a href="/suspensions/`+contract.ID+`" class="request-card"`, "Signed contract for Acme Robotics", "Upload: PDF, up to 20 MB each",
			`<a href="/suspensions/`+docs.ID+`" class="request-card"`, "Awaiting documentation", "Upload: PDF or PNG image, up to 20 MB each",
			`<a href="/suspensions/`+form.ID+`" class="request-card"`, "Fill in a form",
			`<a href="/suspensions/`+done.ID+`" class="request-card"`, `<a href="/suspensions/`+cancelled.ID+`" class="request-card"`,
			"Waiting for you", ">Done<", ">Cancelled<", ">Expired<", "Signed contract for Late Ltd",
			"asked <time datetime=", "due <time datetime=", "in 3 days", `title="`)
		if strings.Contains(p.Body, others.ID) || strings.Contains(p.Body, "Bob") {
			t.Error("My requests lists another founder's request")
		}
		// Waiting requests come first, the contract with its deadline
		// before those without; finished ones after.
		order := []string{contract.ID, docs.ID, form.ID, "Recently done", done.ID}
		for i := 1; i < len(order); i++ {
			if strings.Index(p.Body, order[i-1]) > strings.Index(p.Body, order[i]) {
				t.Errorf("%s comes after %s on My requests", order[i-1], order[i])
			}
		}
		if n := strings.Count(p.Body, `class="request-card"`); n != 6 {
			t.Errorf("%d requests listed; want 6", n)
		}
		noEngineWords(t, p, contract.RunID)

		b := e.signedIn(t, "carol@founders.example", domain.RoleFounder)
		wantPage(t, b.get("/my"), http.StatusOK, "Nothing is waiting for you. We will email you when something is.")
	})
}

func TestUIFounderRequestPageSaysWhatToDoAndWhatHappensNext(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withSmallUploads, func(t *testing.T, e *apiEnv) {
		const ada = "ada@founders.example"
		run, s := e.paused(t, "contract-flow", contractInput(ada, "Acme Robotics"))
		path := "/suspensions/" + s.ID
		a := e.signedIn(t, ada, domain.RoleFounder)

		p := a.get(path)
		wantPage(t, p, http.StatusOK, "<h1>Signed contract for Acme Robotics</h1>", `<p class="ask">Upload a PDF of your signed contract.</p>`,
			"Signature needed", "Waiting for you", "<dt>Investment</dt>", "€250,000.00", "<dt>Sign by</dt>", "Mar 5, 2026",
			`enctype="multipart/form-data"`, `type="file"`, "multiple", `accept="application/pdf"`, "data-dropzone", "PDF, up to 4 KB each",
			`href="/my"`, "due <time")
		noEngineWords(t, p, run.ID)

		// A refused file is explained in plain words next to the input.
		p = a.upload(path+"/documents", file{"contract.pdf", pngBytes})
		wantPage(t, p, http.StatusUnprocessableEntity, `id="files-error"`, "contract.pdf is not a PDF, so it cannot be sent here.", `aria-invalid="true"`)
		if form := between(p.Body, `<form method="post" action="`+path+`/documents"`, "</form>"); !strings.Contains(form, "files-error") {
			t.Errorf("the refusal is not in the upload form:\n%s", p.Body)
		}
		noEngineWords(t, p, run.ID)
		big := append(append([]byte{}, pdfBytes...), make([]byte, 5<<10)...)
		wantPage(t, a.upload(path+"/documents", file{"contract.pdf", big}), http.StatusRequestEntityTooLarge, `id="files-error"`, "contract.pdf is larger than 4 KB")
		e.stillPending(t, s)

		p = a.upload(path+"/documents", file{"contract.pdf", pdfBytes})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("upload = %d:\n%s", p.Status, p.Body)
		}
		after := a.get(p.Header.Get("Location"))
		wantPage(t, after, http.StatusOK,
			"Thanks — we received contract.pdf. The team will review it; you will get an email if anything else is needed.",
			">Done<", ">contract.pdf</a>", "PDF,")
		if strings.Contains(after.Body, `type="file"`) || strings.Contains(after.Body, "Waiting for you") {
			t.Error("a done request still offers the upload")
		}
		noEngineWords(t, after, run.ID)
		e.waitRun(t, run.ID, "succeeded")
		// Coming back later, the page says it is done without the thanks.
		later := a.get(path)
		wantPage(t, later, http.StatusOK, "You answered this request. Nothing more is needed from you.", ">contract.pdf</a>")
		if strings.Contains(later.Body, "Thanks") {
			t.Error("the thanks shows again on a later visit")
		}
	})
}

// A founder's request page shows its fields as the inbox and a
// reviewer's page do: a link that tells the linked site nothing, and a
// dash for a value that pointed nowhere rather than a blank.
func TestUIFounderRequestFieldsReadAsEverywhereElse(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		const ada = "ada@founders.example"
		run, s := e.paused(t, "contract-flow", contractInput(ada, "Acme Robotics"))
		a := e.signedIn(t, ada, domain.RoleFounder)
		p := a.get("/suspensions/" + s.ID)
		wantPage(t, p, http.StatusOK, `<dl class="request-fields">`)
		fields := between(p.Body, `<dl class="request-fields">`, "</dl>")
		for _, w := range []string{
			`<dt>Term sheet</dt><dd><a href="https://docs.example/term-sheets/acme" rel="noopener noreferrer nofollow">https://docs.example/term-sheets/acme</a></dd>`,
			`<dt>Co-investor</dt><dd><span class="empty-value" title="no value">—</span></dd>`,
			`<dt>Sign by</dt><dd><time datetime="2026-03-05">Mar 5, 2026</time></dd>`,
		} {
			if !strings.Contains(fields, w) {
				t.Errorf("the request's fields lack %s:\n%s", w, fields)
			}
		}
		noEngineWords(t, p, run.ID)
	})
}

func TestUIFounderFillsInAFormOnTheirPage(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		const ada = "ada@founders.example"
		run, s := e.paused(t, "intake", map[string]string{"claimId": "c-1", "assignee": ada})
		path := "/suspensions/" + s.ID
		a := e.signedIn(t, ada, domain.RoleFounder)
		p := a.get(path)
		wantPage(t, p, http.StatusOK, "<h1>Awaiting documents</h1>", "Fill in the form below and send it.", `class="schema-form"`, `name="f/receiptIds"`)
		noEngineWords(t, p, run.ID)

		wantPage(t, a.do("POST", path+"/resume", url.Values{"mode": {"fields"}, "f/receiptIds": {""}}), http.StatusUnprocessableEntity, "Some fields need attention")
		e.stillPending(t, s)
		p = a.do("POST", path+"/resume", url.Values{"mode": {"fields"}, "f/receiptIds": {"r-1"}})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("resume = %d:\n%s", p.Status, p.Body)
		}
		wantPage(t, a.get(p.Header.Get("Location")), http.StatusOK, "Thanks — we received your answer. The team will review it", ">Done<")
		e.waitRun(t, run.ID, "succeeded")
	})
}

// TestUIFounderDoneCardsAskNothing: a request that is done, cancelled or
// expired no longer says what it asks ("Upload: …") on My requests.
func TestUIFounderDoneCardsAskNothing(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		const ada = "ada@founders.example"
		withdrawn, _ := e.paused(t, "paperwork", map[string]string{"assignee": ada})
		want(t, e.call(t, "POST", "/api/v1/runs/"+withdrawn.ID+"/cancel", e.admin, ""), http.StatusOK)
		a := e.signedIn(t, ada, domain.RoleFounder)
		p := a.get("/my")
		wantPage(t, p, http.StatusOK, ">Cancelled<")
		if strings.Contains(p.Body, "Upload:") {
			t.Errorf("a cancelled request still asks for an upload:\n%s", p.Body)
		}
	})
}
