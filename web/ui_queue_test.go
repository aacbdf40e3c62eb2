package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// rejectNeedsComment is the expense review's resume schema: a rejection
// must say why.
var rejectNeedsComment = json.RawMessage(`{
  "type": "object",
  "if": {"properties": {"approved": {"const": false}}},
  "then": {"required": ["comment"], "properties": {"comment": {"minLength": 1}}}
}`)

// expense asks for an approval that people recognise: a title and fields
// from its input. An input naming approvers restricts it to them.
func expense() *domain.Workflow {
	return domain.NewWorkflow("expense", "1").
		Step("submit", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				Description string   `json:"description"`
				Amount      float64  `json:"amount"`
				Requester   string   `json:"requester"`
				SpentAt     string   `json:"spentAt"`
				Approvers   []string `json:"approvers"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			opts := []domain.SuspendOption{domain.WithResumeSchema(rejectNeedsComment), domain.WithPresentation(domain.Presentation{
				Title: "Expense: " + in.Description, ReasonLabel: "Expense approval",
				Fields: []domain.Field{
					domain.NewField("Amount", in.Amount, "money:EUR"),
					domain.NewField("Requester", in.Requester, domain.FormatEmail),
					domain.NewField("Spent", in.SpentAt, domain.FormatDateTime),
				},
			})}
			if len(in.Approvers) > 0 {
				opts = append(opts, domain.WithApprovers("", in.Approvers...))
			}
			return domain.StepResult{Commands: []domain.Command{domain.Review("awaiting_expense_approval", req.Input, opts...)}}, nil
		})
}

// claimForm asks a person for data through a schema that a form can show
// whole: titles, hints, named choices, formats and bounds.
func claimForm() *domain.Workflow {
	return domain.NewWorkflow("claimform", "1").
		Step("ask", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("awaiting_details", req.Input, "done",
				domain.WithResumeSchema(claimFormSchema), domain.WithTitle("Claim details", "Fill in what the claim says."))}}, nil
		}).
		Step("done", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in domain.ResumePayload
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Complete(in.ResumeData)}}, nil
		})
}

var claimFormSchema = json.RawMessage(`{
  "type": "object",
  "required": ["verdict", "contact", "amount"],
  "properties": {
    "verdict": {"type": "string", "title": "Verdict", "enum": ["ok", "no"], "enumNames": ["Looks right", "Does not add up"]},
    "contact": {"type": "string", "format": "email", "title": "Contact email", "description": "Where we write back"},
    "amount": {"type": "integer", "title": "Amount", "maximum": 100},
    "due": {"type": "string", "format": "date", "title": "Due"}
  }
}`)

// addNamedPerson is SignedIn for someone with a display name.
func (e *apiEnv) addNamedPerson(t *testing.T, email, name string, role domain.Role) *browser {
	t.Helper()
	_, password := e.addPersonNamed(t, email, name, role)
	b := e.browser(t)
	if p := b.login(email, password); p.Status != http.StatusSeeOther {
		t.Fatalf("login %s = %d", email, p.Status)
	}
	return b
}

// expenses pauses n expense runs, oldest first, and returns their
// suspensions.
func (e *apiEnv) expenses(t *testing.T, n int, extra map[string]any) []suspensionBody {
	t.Helper()
	var out []suspensionBody
	for i := range n {
		in := map[string]any{"description": "Trip " + string(rune('A'+i)), "amount": 100 + i, "requester": "ada@example.com", "spentAt": "2026-11-25T23:30:00Z"}
		for k, v := range extra {
			in[k] = v
		}
		_, s := e.paused(t, "expense", in)
		out = append(out, s)
	}
	return out
}

// location is where a post sent the browser; it must be a redirect.
func location(t *testing.T, p page) string {
	t.Helper()
	if p.Status != http.StatusSeeOther {
		t.Fatalf("status %d, want 303:\n%s", p.Status, p.Body)
	}
	return p.Header.Get("Location")
}

func TestUIApproveAndNextWalksTheFilter(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		ss := e.expenses(t, 2, nil)
		// One the reviewer may not decide, and one of another filter: the
		// queue passes both by.
		e.expenses(t, 1, map[string]any{"approvers": []string{"boss@example.com"}})
		e.paused(t, "review", map[string]any{"amount": 1})
		ss = append(ss, e.expenses(t, 1, nil)...)
		from := url.Values{"workflow": {"expense"}}.Encode()

		inbox := b.get("/inbox?" + from)
		wantPage(t, inbox, http.StatusOK, `href="/suspensions/`+ss[0].ID+`?from=`+url.QueryEscape(from)+`"`)
		first := b.get("/suspensions/" + ss[0].ID + "?from=" + url.QueryEscape(from))
		wantPage(t, first, http.StatusOK, `name="from" value="`+from+`"`, `value="approve-next"`, `value="reject-next"`, `value="approve"`, `value="reject"`,
			`rel="next"`, "/suspensions/"+ss[1].ID, "Keyboard:", "<kbd>a</kbd> approve")

		loc := location(t, b.do("POST", "/suspensions/"+ss[0].ID+"/decide", url.Values{"decision": {"approve-next"}, "from": {from}}))
		if want := "/suspensions/" + ss[1].ID + "?from=" + url.QueryEscape(from) + "&done=approved&prev=" + ss[0].ID; loc != want {
			t.Fatalf("approve & next went to %q; want %q", loc, want)
		}
		wantPage(t, b.get(loc), http.StatusOK, "Approved: this is the next request.", "See the previous request", "/suspensions/"+ss[0].ID)
		loc = location(t, b.do("POST", "/suspensions/"+ss[1].ID+"/decide", url.Values{"decision": {"reject-next"}, "comment": {"Not in policy"}, "from": {from}}))
		if !strings.HasPrefix(loc, "/suspensions/"+ss[2].ID+"?") {
			t.Fatalf("reject & next went to %q; want the third expense %s, past the one for the boss", loc, ss[2].ID)
		}
		loc = location(t, b.do("POST", "/suspensions/"+ss[2].ID+"/decide", url.Values{"decision": {"approve-next"}, "from": {from}}))
		if want := "/inbox?done=all&workflow=expense"; loc != want {
			t.Fatalf("after the last one: %q; want %q", loc, want)
		}
		wantPage(t, b.get(loc), http.StatusOK, "All done")
		for i, want := range []string{"approved", "rejected", "approved"} {
			if got := e.suspension(t, ss[i].ID); got.Decision != want {
				t.Errorf("expense %d: decision %q; want %q", i, got.Decision, want)
			}
		}

		// Plain Approve stays on the request.
		more := e.expenses(t, 1, nil)
		loc = location(t, b.do("POST", "/suspensions/"+more[0].ID+"/decide", url.Values{"decision": {"approve"}, "from": {from}}))
		if want := "/suspensions/" + more[0].ID + "?from=" + url.QueryEscape(from) + "&done=approved&then=succeeded"; loc != want {
			t.Fatalf("approve went to %q; want %q", loc, want)
		}
	})
}

func TestUIRejectNeedsTheCommentTheSchemaRequires(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		s := e.expenses(t, 1, nil)[0]
		p := b.get("/suspensions/" + s.ID)
		wantPage(t, p, http.StatusOK, "(required to reject)", `<textarea id="comment" name="comment" rows="3" required>`)
		for _, v := range []string{"approve-next", "approve"} {
			if !regexp.MustCompile(`value="` + v + `"[^>]*formnovalidate`).MatchString(p.Body) {
				t.Errorf("the %s button is held back by the comment only rejections need", v)
			}
		}
		wantPage(t, b.do("POST", "/suspensions/"+s.ID+"/decide", url.Values{"decision": {"reject-next"}}), http.StatusUnprocessableEntity)
		e.stillPending(t, s)
	})
}

func TestUISubmitAndNext(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		_, s1 := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		_, s2 := e.paused(t, "intake", map[string]string{"claimId": "c-2"})
		from := url.Values{"reason": {"awaiting_documents"}}.Encode()
		wantPage(t, b.get("/suspensions/"+s1.ID+"?from="+url.QueryEscape(from)), http.StatusOK, `value="next"`, "Submit &amp; next")
		loc := location(t, b.do("POST", "/suspensions/"+s1.ID+"/resume", url.Values{"mode": {"fields"}, "f/receiptIds": {"r-1"}, "then": {"next"}, "from": {from}}))
		if !strings.HasPrefix(loc, "/suspensions/"+s2.ID+"?") || !strings.Contains(loc, "done=resumed") {
			t.Fatalf("submit & next went to %q; want %s", loc, s2.ID)
		}
		loc = location(t, b.do("POST", "/suspensions/"+s2.ID+"/resume", url.Values{"resumeData": {`{"receiptIds":["r-2"]}`}, "then": {"next"}, "from": {from}}))
		if loc != "/inbox?done=all&reason=awaiting_documents" {
			t.Fatalf("after the last one: %q", loc)
		}
	})
}

func TestUIStaleDecisionSaysWhoAndKeepsTheComment(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		rita := e.addNamedPerson(t, "rita@example.com", "Rita Reviewer", domain.RoleReviewer)
		late := e.signedIn(t, "late@example.com", domain.RoleReviewer)
		ss := e.expenses(t, 2, nil)
		path := "/suspensions/" + ss[0].ID
		wantPage(t, late.get(path), http.StatusOK, `value="approve-next"`)
		location(t, rita.do("POST", path+"/decide", url.Values{"decision": {"approve"}}))

		p := late.do("POST", path+"/decide", url.Values{"decision": {"reject-next"}, "comment": {"Receipt <missing>"}})
		wantPage(t, p, http.StatusConflict, "<strong>Rita Reviewer approved this</strong>", "just now",
			`<textarea id="stale-typed" readonly rows="3">Receipt &lt;missing&gt;</textarea>`, "Go to the next request", "/suspensions/"+ss[1].ID)
		if strings.Contains(p.Body, `value="approve-next"`) {
			t.Error("the stale answer still offers the decision")
		}
		if got := e.suspension(t, ss[0].ID); got.Decision != "approved" {
			t.Fatalf("the late rejection changed the decision: %+v", got)
		}
	})
}

func TestUIInboxShowsRequestsInTheViewersWords(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		s := e.expenses(t, 1, nil)[0]
		e.paused(t, "intake", map[string]string{"claimId": "c-1", "assignee": "ada@founders.example"})
		p := b.do("GET", "/inbox", nil, "Accept-Language", "de-DE,de;q=0.9", "Cookie", "tz=Europe/Berlin")
		wantPage(t, p, http.StatusOK,
			`>Expense: Trip A</a>`, "100,00\u00a0€", `href="mailto:ada@example.com"`, "26.11.2026, 00:30 CET",
			`<h2 class="reason" data-reason="awaiting_expense_approval">Expense approval <span class="count">1</span></h2>`,
			`<option value="awaiting_expense_approval">Expense approval</option>`,
			`<option value="awaiting_documents">Awaiting documents</option>`,
			">Approve</td>", ">any reviewer</td>", ">Provide input</td>", ">ada@founders.example</td>",
			// A request without a title reads by its reason's label and workflow.
			">Awaiting documents · Intake</a>",
			// Kinds are grouped by what they ask, the raw kind left to the filter.
			`title="approval">Approvals</a>`, `title="input">Forms and uploads</a>`)
		wantPage(t, b.get("/inbox?reason=awaiting_expense_approval"), http.StatusOK, `<option value="awaiting_expense_approval" selected>Expense approval</option>`, "Expense: Trip A")
		if p := b.get("/inbox?reason=awaiting_expense_approval"); strings.Contains(p.Body, "intake</a>") {
			t.Error("the reason filter let another reason through")
		}

		// The request page leads with the title and fields; the engine's
		// words wait under technical details.
		p = b.get("/suspensions/" + s.ID)
		wantPage(t, p, http.StatusOK, "<title>Expense: Trip A · Tollgate</title>", "<h1>Expense: Trip A</h1>", "€100.00",
			`<details class="technical"`, "<code>awaiting_expense_approval</code>", "Nov 25, 2026, 11:30 PM UTC")
		main := p.Body[:strings.Index(p.Body, `<details class="technical"`)]
		if strings.Contains(main, "awaiting_expense_approval") || strings.Contains(main, s.RunID) {
			t.Error("the raw reason or the run id shows outside the technical details")
		}
	})
}

// tags matches an HTML tag, to read a fragment's text as a screen reader
// or a copy does.
var tags = regexp.MustCompile(`<[^>]*>`)

// An inbox row's fields read "Amount: €100.00", not "Amount€100.00": the
// label and the value are separated in the text itself, not only by a
// margin.
func TestUIInboxRowFieldsReadWithTheirLabels(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		s := e.expenses(t, 1, nil)[0]
		p := b.get("/inbox")
		wantPage(t, p, http.StatusOK, `<tr data-suspension="`+s.ID+`"`)
		pairs := between(between(p.Body, `<tr data-suspension="`+s.ID+`"`, "</tr>"), `<ul class="field-pairs">`, "</ul>")
		var got []string
		for li := range strings.SplitSeq(strings.TrimSuffix(strings.TrimPrefix(pairs, "<li>"), "</li>"), "</li><li>") {
			got = append(got, tags.ReplaceAllString(li, ""))
		}
		want := []string{"Amount: €100.00", "Requester: ada@example.com", "Spent: Nov 25, 2026, 11:30 PM UTC"}
		if !slices.Equal(got, want) {
			t.Errorf("the row's fields read %q; want %q", got, want)
		}
	})
}

func TestUISchemaFormSpeaksPlainWords(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		_, s := e.paused(t, "claimform", map[string]string{"claim": "c-1"})
		path := "/suspensions/" + s.ID
		p := b.get(path)
		wantPage(t, p, http.StatusOK, `<label for="field-contact">Contact email`, `<small id="field-contact-hint" class="hint">Where we write back</small>`,
			`type="email"`, `type="date"`, `<option value="" selected>Choose…</option>`, `<option value="ok">Looks right</option><option value="no">Does not add up</option>`)

		p = b.do("POST", path+"/resume", url.Values{"mode": {"fields"}, "f/verdict": {"ok"}, "f/contact": {"not-an-email"}, "f/amount": {"150"}})
		wantPage(t, p, http.StatusUnprocessableEntity, `data-error-summary`, `tabindex="-1"`, `href="#field-contact"`,
			`<p id="field-contact-error" class="field-error"><span class="visually-hidden">Error: </span>Enter an email address like name@example.com</p>`,
			`aria-describedby="field-contact-hint field-contact-error" aria-invalid="true"`, `value="not-an-email"`, `value="150"`)
		e.stillPending(t, s)

		// With the email right, the schema's bound is reported in plain words.
		p = b.do("POST", path+"/resume", url.Values{"mode": {"fields"}, "f/verdict": {""}, "f/contact": {"ada@example.com"}, "f/amount": {"150"}})
		wantPage(t, p, http.StatusUnprocessableEntity, `<p id="field-amount-error" class="field-error"><span class="visually-hidden">Error: </span>Must be 100 or less</p>`,
			`<p id="field-verdict-error" class="field-error"><span class="visually-hidden">Error: </span>This field is required</p>`,
			`href="#field-amount"`, `aria-describedby="field-amount-error" aria-invalid="true"`)
		if strings.Contains(p.Body, "maximum: got") {
			t.Error("the schema validator's own words reach the page")
		}
		e.stillPending(t, s)
		location(t, b.do("POST", path+"/resume", url.Values{"mode": {"fields"}, "f/verdict": {"ok"}, "f/contact": {"ada@example.com"}, "f/amount": {"99"}}))
	})
}

// TestUISchemaFormShowsEveryErrorAtOnce: a form with a badly typed email,
// an amount over its bound and a required choice left empty says all
// three at once, not one a round; the amount's input carries the bound,
// so the browser catches it before sending.
func TestUISchemaFormShowsEveryErrorAtOnce(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		_, s := e.paused(t, "claimform", map[string]string{"claim": "c-2"})
		path := "/suspensions/" + s.ID
		wantPage(t, b.get(path), http.StatusOK, `name="f/amount" type="number"`, `max="100"`)
		p := b.do("POST", path+"/resume", url.Values{"mode": {"fields"}, "f/verdict": {""}, "f/contact": {"not-an-email"}, "f/amount": {"150"}})
		wantPage(t, p, http.StatusUnprocessableEntity,
			`<p id="field-contact-error" class="field-error"><span class="visually-hidden">Error: </span>Enter an email address like name@example.com</p>`,
			`<p id="field-amount-error" class="field-error"><span class="visually-hidden">Error: </span>Must be 100 or less</p>`,
			`<p id="field-verdict-error" class="field-error"><span class="visually-hidden">Error: </span>This field is required</p>`,
			`href="#field-contact"`, `href="#field-amount"`, `href="#field-verdict"`)
		if strings.Count(p.Body, `href="#field-contact"`) != 1 || strings.Count(p.Body, `id="field-contact-error"`) != 1 {
			t.Errorf("the refused email is reported more than once:\n%s", p.Body)
		}
		e.stillPending(t, s)
	})
}

// TestUIInboxCountsFollowTheFilter: the total and each reason's count say
// how many the filter matches, not how many wait in all; the filters in
// use are named above the list; "All done" is not said above a request
// that has come for the viewer since.
func TestUIInboxCountsFollowTheFilter(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		e.expenses(t, 3, nil)
		e.expenses(t, 1, map[string]any{"requester": "zed@example.com"})
		e.paused(t, "intake", map[string]string{"claimId": "c-9"})
		p := b.get("/inbox")
		wantPage(t, p, http.StatusOK, `<span data-live="pending-total">5</span>`)
		p = b.get("/inbox?q=zed%40example.com")
		wantPage(t, p, http.StatusOK, `<span data-live="pending-total">1</span>`,
			`data-reason="awaiting_expense_approval">Expense approval <span class="count">1</span>`,
			`data-testid="filter-chips"`, `Search: &#34;zed@example.com&#34;`)
		p = b.get("/inbox?kind=approval")
		wantPage(t, p, http.StatusOK, `<span data-live="pending-total">4</span>`)
		if strings.Contains(p.Body, `title="awaiting_documents">Awaiting documents</a> <span class="count">1`) {
			t.Error("the reason counts of a kind filter count another kind")
		}
		p = b.get("/inbox?done=all&workflow=expense")
		if strings.Contains(p.Body, "All done") {
			t.Errorf("the inbox says all is done above requests for the viewer:\n%s", p.Body)
		}
		wantPage(t, b.get("/inbox?done=all&workflow=nothing-here"), http.StatusOK, "All done")
	})
}
