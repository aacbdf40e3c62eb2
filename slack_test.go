package tollgate_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage/storagetest"
	"github.com/tollgatehq/tollgate/web/slacktest"
)

const slackSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// slackAsk is the input of the slack-approval workflow: where its request
// goes and how it is decided.
type slackAsk struct {
	Slack           string   `json:"slack"`
	Kind            string   `json:"kind,omitempty"`
	Approvers       []string `json:"approvers,omitempty"`
	Quorum          int      `json:"quorum,omitempty"`
	SeparateDuties  bool     `json:"separateDuties,omitempty"`
	CommentToReject bool     `json:"commentToReject,omitempty"`
}

// slackApproval asks for a decision posted to Slack as its input says.
func slackApproval() *domain.Workflow {
	return domain.NewWorkflow("slack-approval", "1").
		Step("ask", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in slackAsk
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			opts := []domain.SuspendOption{domain.WithSlack(in.Slack), domain.WithKind(domain.KindApproval),
				domain.WithPresentation(domain.Presentation{Title: "Payout to Northwind", Fields: []domain.Field{domain.NewField("Amount", 1389, "money:EUR")}}),
				domain.WithPolicy(domain.ApprovalPolicy{Quorum: in.Quorum, SeparationOfDuties: in.SeparateDuties, RejectRequiresComment: in.CommentToReject})}
			if len(in.Approvers) > 0 {
				opts = append(opts, domain.WithApprovers("", in.Approvers...))
			}
			if in.Kind == "input" {
				opts = []domain.SuspendOption{domain.WithSlack(in.Slack), domain.WithKind(domain.KindInput), domain.WithTitle("Supplier details", ""),
					domain.WithResumeSchema(json.RawMessage(`{"type":"object","required":["iban"],"properties":{"iban":{"type":"string","title":"IBAN","minLength":15},"urgent":{"type":"boolean"},"tier":{"type":"string","enum":["gold","silver"]},"limit":{"type":"integer"}}}`))}
			}
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("payout", nil, "done", opts...)}}, nil
		}).
		Step("done", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Complete(nil)}}, nil
		})
}

// slackEnv is Tollgate posting to a fake Slack, served over HTTP.
type slackEnv struct {
	tg    *tollgate.Tollgate
	slack *slacktest.Server
	url   string
	hc    *http.Client
	users map[string]domain.User
}

func newSlackEnv(t *testing.T, dialect string) *slackEnv {
	t.Helper()
	e := &slackEnv{slack: slacktest.New(t, map[string]string{"URITA": "rita@example.com", "USAM": "Sam@Example.com", "UADA": "ada@example.com", "USTRANGER": "stranger@elsewhere.example", "XRITA": "rita@example.com"}),
		hc: &http.Client{Timeout: 10 * time.Second}, users: map[string]domain.User{}}
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	c := tollgate.Config{DataDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})), PollInterval: 50 * time.Millisecond, PublicURL: srv.URL,
		Slack: &tollgate.SlackConfig{BotToken: slacktest.Token, SigningSecret: slackSecret, APIURL: e.slack.URL + "/api/"}}
	if dialect == "postgres" {
		c.DatabaseURL = storagetest.NewDatabase(t)
	}
	tg, err := tollgate.New(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	e.tg, h = tg, tg.Handler()
	if err := tg.RegisterWorkflow(slackApproval()); err != nil {
		t.Fatal(err)
	}
	for _, u := range []domain.User{{ID: "u-rita", Email: "rita@example.com", Name: "Rita Reviewer", Role: domain.RoleReviewer},
		{ID: "u-sam", Email: "sam@example.com", Name: "Sam Second", Role: domain.RoleReviewer},
		{ID: "u-ada", Email: "ada@example.com", Name: "Ada Admin", Role: domain.RoleAdmin}} {
		u.CreatedAt = time.Now()
		if _, err := tg.Store().CreateUser(t.Context(), u, ""); err != nil {
			t.Fatal(err)
		}
		e.users[u.Email] = u
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = tg.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done; tg.Close() })
	return e
}

// ask starts a run, as who when set, and returns its pending request once
// its Slack messages are posted (want of them).
func (e *slackEnv) ask(t *testing.T, in slackAsk, who string, want int) (domain.Suspension, []slacktest.Post) {
	t.Helper()
	raw, _ := json.Marshal(in)
	before, _, _, _ := e.slack.Snapshot()
	var run domain.Run
	var err error
	if who == "" {
		run, err = e.tg.Start(t.Context(), "slack-approval", json.RawMessage(raw), nil)
	} else {
		u := e.users[who]
		run, _, err = e.tg.Engine().StartAs(t.Context(), domain.Starter{ID: u.ID, Email: u.Email, Role: u.Role}, "slack-approval", raw, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	var s domain.Suspension
	waitFor(t, "the request's Slack messages", func() bool {
		posts, _, _, _ := e.slack.Snapshot()
		if len(posts) < len(before)+want {
			return false
		}
		ss, _, err := e.tg.Store().Suspensions(t.Context(), domain.SuspensionFilter{RunID: run.ID, Status: domain.SuspensionPending})
		if err != nil || len(ss) != 1 {
			return false
		}
		s = ss[0]
		return true
	})
	posts, _, _, _ := e.slack.Snapshot()
	t.Logf("%d Slack message(s) at the fake API %v after the run started", want, posts[len(posts)-1].At.Sub(started).Round(time.Millisecond))
	return s, posts[len(before):]
}

// interact sends an interaction signed at ts (now when zero) and returns
// the status and body of the answer.
func (e *slackEnv) interact(t *testing.T, secret string, ts time.Time, payload any) (int, string) {
	t.Helper()
	if ts.IsZero() {
		ts = time.Now()
	}
	return e.send(t, slacktest.Interaction(t, e.url+"/slack/interactions", secret, ts, payload))
}

func (e *slackEnv) send(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, b.String()
}

// votes is the request's votes now.
func (e *slackEnv) request(t *testing.T, id string) domain.Suspension {
	t.Helper()
	s, err := e.tg.Store().Suspension(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// updatedTo waits for the message of post to be written again saying all
// of want.
func (e *slackEnv) updatedTo(t *testing.T, post slacktest.Post, want ...string) {
	t.Helper()
	waitFor(t, "the message to say "+strings.Join(want, ", "), func() bool {
		_, updates, _, _ := e.slack.Snapshot()
		for i := len(updates) - 1; i >= 0; i-- {
			if u := updates[i]; u.Channel == post.Channel && u.TS == post.TS {
				for _, w := range want {
					if !strings.Contains(string(u.Blocks), w) {
						return false
					}
				}
				return true
			}
		}
		return false
	})
}

// toldEphemerally waits for an ephemeral message to user saying want.
func (e *slackEnv) toldEphemerally(t *testing.T, user, want string) {
	t.Helper()
	waitFor(t, user+" to be told "+want, func() bool {
		_, _, eph, _ := e.slack.Snapshot()
		for _, m := range eph {
			if m.User == user && strings.Contains(m.Text, want) {
				return true
			}
		}
		return false
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 15s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A request whose step names a Slack channel is posted there with its
// title, fields and buttons; people decide with the buttons as the
// Tollgate person of their Slack email, through the engine, and the
// message says what happened. Interactions not signed by Slack, too old or
// seen before change nothing.
func TestSlackDecidesApprovals(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newSlackEnv(t, dialect)
		s, posts := e.ask(t, slackAsk{Slack: "#approvals", Quorum: 2}, "", 1)
		post := posts[0]
		for _, want := range []string{"Payout to Northwind", "Amount", "€1,389.00", `"action_id":"tollgate_approve"`, `"action_id":"tollgate_reject"`, e.url + "/suspensions/" + s.ID} {
			if !strings.Contains(string(post.Blocks), want) {
				t.Errorf("the message lacks %s:\n%s", want, post.Blocks)
			}
		}
		if post.Channel != "CAPPROVALS" || !strings.Contains(string(post.Metadata), "tollgate_request") {
			t.Errorf("posted to %s with metadata %s", post.Channel, post.Metadata)
		}

		approve := slacktest.Click("URITA", "CAPPROVALS", "tollgate_approve", s.ID)
		for name, send := range map[string]func() (int, string){
			"wrongly signed": func() (int, string) { return e.interact(t, "not the signing secret at all!!", time.Time{}, approve) },
			"too old":        func() (int, string) { return e.interact(t, slackSecret, time.Now().Add(-6*time.Minute), approve) },
			"unsigned": func() (int, string) {
				req := slacktest.Interaction(t, e.url+"/slack/interactions", slackSecret, time.Now(), approve)
				req.Header.Del("X-Slack-Signature")
				req.Header.Del("X-Slack-Request-Timestamp")
				return e.send(t, req)
			},
		} {
			if status, _ := send(); status != http.StatusUnauthorized {
				t.Errorf("%s interaction = %d, want 401", name, status)
			}
		}
		if got := e.request(t, s.ID); len(got.Votes) != 0 {
			t.Fatalf("refused interactions voted: %+v", got.Votes)
		}

		// Someone Slack knows and Tollgate does not is told why, alone.
		if status, _ := e.interact(t, slackSecret, time.Time{}, slacktest.Click("USTRANGER", "CAPPROVALS", "tollgate_approve", s.ID)); status != http.StatusOK {
			t.Fatalf("a stranger's click = %d", status)
		}
		e.toldEphemerally(t, "USTRANGER", "Tollgate has no account for stranger@elsewhere.example")
		// Someone of another workspace (Slack Connect) may show any email,
		// Rita's included: only this workspace's people decide.
		e.interact(t, slackSecret, time.Time{}, slacktest.Click("XRITA", "CAPPROVALS", "tollgate_approve", s.ID))
		e.toldEphemerally(t, "XRITA", "only from people of its own Slack workspace")
		if got := e.request(t, s.ID); len(got.Votes) != 0 {
			t.Fatalf("a person of another workspace voted: %+v", got.Votes)
		}

		// Rita's click is her vote, from Slack; the message says so.
		req := slacktest.Interaction(t, e.url+"/slack/interactions", slackSecret, time.Now(), approve)
		replay := req.Clone(t.Context())
		body, _ := req.GetBody()
		replay.Body = body
		if status, _ := e.send(t, req); status != http.StatusOK {
			t.Fatalf("Rita's click = %d", status)
		}
		got := e.request(t, s.ID)
		if len(got.Votes) != 1 || got.Votes[0].Voter != "rita@example.com" || got.Votes[0].Channel != domain.ChannelSlack || got.Status != domain.SuspensionPending {
			t.Fatalf("after Rita's click: %+v", got.Votes)
		}
		e.updatedTo(t, post, "Approved by Rita Reviewer (1 of 2)", "tollgate_approve")
		if status, _ := e.send(t, replay); status != http.StatusUnauthorized {
			t.Errorf("a replayed interaction = %d, want 401", status)
		}
		// A second click of hers is a second vote of the same person.
		e.interact(t, slackSecret, time.Time{}, slacktest.Click("URITA", "CAPPROVALS", "tollgate_approve", s.ID))
		e.toldEphemerally(t, "URITA", "already counts")
		if got := e.request(t, s.ID); len(got.Votes) != 1 {
			t.Fatalf("a second click voted again: %+v", got.Votes)
		}

		// Sam's vote (his Slack email spelt otherwise) decides it.
		e.interact(t, slackSecret, time.Time{}, slacktest.Click("USAM", "CAPPROVALS", "tollgate_approve", s.ID))
		got = e.request(t, s.ID)
		if got.Status != domain.SuspensionResumed || got.Decision != domain.DecisionApproved || len(got.Votes) != 2 {
			t.Fatalf("after Sam's click: %s %s %+v", got.Status, got.Decision, got.Votes)
		}
		e.updatedTo(t, post, "*Approved* by Sam Second")
		entries, _, err := e.tg.Store().Audit(t.Context(), domain.AuditFilter{Action: "suspension.approve"})
		if err != nil || len(entries) != 2 || !strings.Contains(strings.ReplaceAll(string(entries[0].Data), " ", ""), `"via":"slack"`) {
			t.Errorf("audit of the votes: %+v (%v)", entries, err)
		}
	})
}

// Two people clicking Approve at once on a quorum of two both count, and
// the approval resolves once.
func TestSlackQuorumOfTwoAtOnce(t *testing.T) {
	e := newSlackEnv(t, "postgres")
	s, _ := e.ask(t, slackAsk{Slack: "#approvals", Quorum: 2}, "", 1)
	var wg sync.WaitGroup
	for _, who := range []string{"URITA", "USAM"} {
		wg.Go(func() {
			e.interact(t, slackSecret, time.Time{}, slacktest.Click(who, "CAPPROVALS", "tollgate_approve", s.ID))
		})
	}
	wg.Wait()
	got := e.request(t, s.ID)
	if got.Status != domain.SuspensionResumed || got.Decision != domain.DecisionApproved || len(got.Votes) != 2 {
		t.Fatalf("after two clicks at once: %s %s %+v", got.Status, got.Decision, got.Votes)
	}
}

// A rejection that needs a comment opens a modal; its submission rejects
// with the comment, and one without a comment is refused in the modal.
// Separation of duties holds for a person deciding from Slack, and a
// request decided in Tollgate updates its message.
func TestSlackModalsDutiesAndDecisionsElsewhere(t *testing.T) {
	e := newSlackEnv(t, "sqlite")
	s, posts := e.ask(t, slackAsk{Slack: "#approvals", CommentToReject: true}, "", 1)
	e.interact(t, slackSecret, time.Time{}, slacktest.Click("USAM", "CAPPROVALS", "tollgate_reject", s.ID))
	var view struct {
		CallbackID      string `json:"callback_id"`
		PrivateMetadata string `json:"private_metadata"`
	}
	waitFor(t, "the comment modal", func() bool {
		_, _, _, views := e.slack.Snapshot()
		return len(views) == 1 && json.Unmarshal(views[0], &view) == nil
	})
	if view.CallbackID != "tollgate_decide" || len(e.request(t, s.ID).Votes) != 0 {
		t.Fatalf("the reject click opened %+v; want the comment modal and no vote", view)
	}
	comment := func(text string) map[string]map[string]any {
		return map[string]map[string]any{"comment": {"v": map[string]any{"type": "plain_text_input", "value": text}}}
	}
	status, body := e.interact(t, slackSecret, time.Time{}, slacktest.Submit("USAM", view.CallbackID, view.PrivateMetadata, comment("  ")))
	if status != http.StatusOK || !strings.Contains(body, `"response_action":"errors"`) || !strings.Contains(body, `"comment"`) {
		t.Fatalf("a rejection without a comment = %d %s; want the modal's comment field in error", status, body)
	}
	status, body = e.interact(t, slackSecret, time.Time{}, slacktest.Submit("USAM", view.CallbackID, view.PrivateMetadata, comment("IBAN does not match the invoice")))
	if status != http.StatusOK || strings.Contains(body, "errors") {
		t.Fatalf("the rejection = %d %s", status, body)
	}
	got := e.request(t, s.ID)
	if got.Decision != domain.DecisionRejected || got.Votes[0].Comment != "IBAN does not match the invoice" || got.Votes[0].Channel != domain.ChannelSlack {
		t.Fatalf("after the modal: %s %+v", got.Decision, got.Votes)
	}
	e.updatedTo(t, posts[0], "*Rejected* by Sam Second", "IBAN does not match the invoice")

	// Rita started this run, and it separates duties.
	s, _ = e.ask(t, slackAsk{Slack: "#approvals", SeparateDuties: true}, "rita@example.com", 1)
	e.interact(t, slackSecret, time.Time{}, slacktest.Click("URITA", "CAPPROVALS", "tollgate_approve", s.ID))
	e.toldEphemerally(t, "URITA", "You started this run")
	if got := e.request(t, s.ID); len(got.Votes) != 0 {
		t.Fatalf("the run's starter voted from Slack: %+v", got.Votes)
	}

	// Decided in Tollgate: the message says where and by whom.
	s, posts = e.ask(t, slackAsk{Slack: "#approvals"}, "", 1)
	ada := e.users["ada@example.com"]
	if _, err := e.tg.Engine().Decide(t.Context(), domain.ResumeRequest{SuspensionID: s.ID, By: ada.Email, Actor: &ada, Channel: domain.ChannelWeb}, true, "ok"); err != nil {
		t.Fatal(err)
	}
	e.updatedTo(t, posts[0], "*Approved* in Tollgate by Ada Admin")
}

// A request for "dm" goes to each person who may decide it, in a direct
// message; an input with a simple form opens it as a modal and resumes
// with its answer.
func TestSlackDirectMessagesAndInputs(t *testing.T) {
	e := newSlackEnv(t, "sqlite")
	_, posts := e.ask(t, slackAsk{Slack: "dm", Approvers: []string{"rita@example.com", "sam@example.com"}}, "", 2)
	channels := map[string]bool{}
	for _, p := range posts {
		channels[p.Channel] = true
	}
	if !channels["DURITA"] || !channels["DUSAM"] || len(channels) != 2 {
		t.Fatalf("direct messages went to %v; want Rita's and Sam's", channels)
	}

	s, posts := e.ask(t, slackAsk{Slack: "#approvals", Kind: "input"}, "", 1)
	if !strings.Contains(string(posts[0].Blocks), `"action_id":"tollgate_answer"`) {
		t.Fatalf("an input with a simple form has no Answer button:\n%s", posts[0].Blocks)
	}
	e.interact(t, slackSecret, time.Time{}, slacktest.Click("UADA", "CAPPROVALS", "tollgate_answer", s.ID))
	var view struct {
		CallbackID      string          `json:"callback_id"`
		PrivateMetadata string          `json:"private_metadata"`
		Blocks          json.RawMessage `json:"blocks"`
	}
	waitFor(t, "the answer modal", func() bool {
		_, _, _, views := e.slack.Snapshot()
		return len(views) == 1 && json.Unmarshal(views[0], &view) == nil
	})
	for _, want := range []string{`"block_id":"f/iban"`, `"type":"checkboxes"`, `"type":"static_select"`, `"type":"number_input"`} {
		if !strings.Contains(string(view.Blocks), want) {
			t.Errorf("the modal lacks %s:\n%s", want, view.Blocks)
		}
	}
	values := func(iban string) map[string]map[string]any {
		return map[string]map[string]any{
			"f/iban":   {"v": map[string]any{"type": "plain_text_input", "value": iban}},
			"f/urgent": {"v": map[string]any{"type": "checkboxes", "selected_options": []any{map[string]any{"value": "true"}}}},
			"f/tier":   {"v": map[string]any{"type": "static_select", "selected_option": map[string]any{"value": "gold"}}},
			"f/limit":  {"v": map[string]any{"type": "number_input", "value": "5000"}},
		}
	}
	status, body := e.interact(t, slackSecret, time.Time{}, slacktest.Submit("UADA", view.CallbackID, view.PrivateMetadata, values("PT50")))
	if !strings.Contains(body, `"f/iban"`) {
		t.Fatalf("a short IBAN = %d %s; want the field in error", status, body)
	}
	e.interact(t, slackSecret, time.Time{}, slacktest.Submit("UADA", view.CallbackID, view.PrivateMetadata, values("PT50000201231234567890154")))
	got := e.request(t, s.ID)
	if got.Status != domain.SuspensionResumed || !strings.Contains(string(got.ResumeData), `"tier":"gold"`) || !strings.Contains(string(got.ResumeData), `"urgent":true`) || !strings.Contains(string(got.ResumeData), `"limit":5000`) {
		t.Fatalf("after the answer: %s %s", got.Status, got.ResumeData)
	}
	e.updatedTo(t, posts[0], "*Answered* by Ada Admin")
}

// A post whose answer was lost is found in the channel, not posted again.
func TestSlackLostPostIsNotDoubled(t *testing.T) {
	e := newSlackEnv(t, "sqlite")
	e.slack.FailPosts(1)
	s, posts := e.ask(t, slackAsk{Slack: "#approvals"}, "", 1)
	// The message shows nothing of the request yet: once found it is
	// written again.
	e.updatedTo(t, posts[0], "tollgate_approve")
	time.Sleep(2 * time.Second) // several rounds
	all, _, _, _ := e.slack.Snapshot()
	if len(all) != 1 {
		t.Fatalf("%d posts of request %s, want 1", len(all), s.ID)
	}
}
