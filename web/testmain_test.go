package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/replay"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
	"github.com/tollgatehq/tollgate/web"
	"github.com/tollgatehq/tollgate/web/api"
	"github.com/tollgatehq/tollgate/web/ui"
)

func TestMain(m *testing.M) { storagetest.Main(m) }

// The people every API test environment has, one per role.
const (
	adminEmail    = "admin@example.com"
	reviewerEmail = "reviewer@example.com"
	founderAEmail = "founder.a@example.com"
	founderBEmail = "founder.b@example.com"
)

// docSchema is the resume schema of the paperwork workflow's pause, which
// takes uploads: its documentIds may name only documents uploaded to it.
var docSchema = json.RawMessage(`{
  "type": "object",
  "required": ["documentIds"],
  "additionalProperties": false,
  "properties": {
    "documentIds": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    "note": {"type": "string"}
  }
}`)

// receiptSchema is the resume schema of the intake workflow's pause: ids
// of receipts kept elsewhere, which anyone may type.
var receiptSchema = json.RawMessage(`{
  "type": "object",
  "required": ["receiptIds"],
  "additionalProperties": false,
  "properties": {
    "receiptIds": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    "note": {"type": "string"}
  }
}`)

// apiEnv is the whole stack in-process: a migrated database, an engine
// running the test workflows and the API served over HTTP.
type apiEnv struct {
	db      *storage.DB
	srv     *httptest.Server
	api     *web.Server
	userIDs map[string]string // by email

	admin, reviewer, founderA, founderB string // API keys
	// workflows is how many workflows the server has.
	workflows int

	// finished counts executions of intake's resume step; paid counts
	// review's deferred step.
	finished atomic.Int64
	paid     atomic.Int64
	// bankDown fails charge's only step while it holds.
	bankDown atomic.Bool
	// early's first step reports its run on entered, then blocks until
	// gate is closed (releaseEarly).
	entered     chan string
	gate        chan struct{}
	releaseOnce sync.Once
}

// forEachDialect runs f against the full stack on SQLite and on PostgreSQL.
func forEachDialect(t *testing.T, f func(t *testing.T, e *apiEnv)) {
	t.Helper()
	forEachDialectWith(t, nil, f)
}

// forEachDialectWith is forEachDialect with a hook that adjusts the server
// before it starts.
func forEachDialectWith(t *testing.T, configure func(*web.Server), f func(t *testing.T, e *apiEnv)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		f(t, newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, configure))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		f(t, newAPIEnv(t, storage.Opts{URL: storagetest.NewDatabase(t)}, configure))
	})
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// openDB opens the database o names until the test ends, migrated if
// migrate is set.
func openDB(t testing.TB, o storage.Opts, migrate bool) *storage.DB {
	t.Helper()
	if migrate {
		return storagetest.Open(t, o)
	}
	o.Log = testLogger(t)
	db, err := storage.Open(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newAPIEnv(t testing.TB, o storage.Opts, configure func(*web.Server)) *apiEnv {
	t.Helper()
	return newAPIEnvAround(t, o, configure, nil)
}

// newAPIEnvAround is newAPIEnv serving the server's handler wrapped in
// around, when set.
func newAPIEnvAround(t testing.TB, o storage.Opts, configure func(*web.Server), around func(http.Handler) http.Handler) *apiEnv {
	t.Helper()
	e := &apiEnv{db: storagetest.Open(t, o), userIDs: map[string]string{}, entered: make(chan string, 1), gate: make(chan struct{})}
	reg := domain.NewRegistry()
	for _, wf := range []*domain.Workflow{e.intake(), e.review(), delayWorkflow(), e.early(), paperwork(), selfService(), founderDoc(t), contractFlow(), expense(), claimForm(), payoutSignOff(t), escalating(t), settleWorkflow(), papersWorkflow(), e.charge(), e.linger()} {
		if err := reg.Register(wf); err != nil {
			t.Fatal(err)
		}
		e.workflows++
	}
	feed := &replay.Feed{}
	for _, d := range []*replay.Definition{replayPipeline(), replaySignOffs()} {
		if err := d.Register(reg, &replay.Env{Store: e.db, Observe: feed.Publish}); err != nil {
			t.Fatal(err)
		}
		e.workflows++
	}
	log := testLogger(t)
	eng := engine.New(e.db, reg, engine.Opts{
		PollInterval: 20 * time.Millisecond, ShutdownGrace: 2 * time.Second,
		ValidateResumeData: web.ValidateResumeData, Log: log,
	})
	srv := &web.Server{Engine: eng, Store: e.db, Auth: e.db, Health: e.db, Log: log, Feed: feed, Links: e.db, Schedules: eng.Schedules(e.db)}
	if configure != nil {
		configure(srv)
	}
	e.api = srv
	if around == nil {
		e.srv = newServer(t, srv)
	} else {
		e.srv = httptest.NewServer(checkContract(t, around(srv.Handler(api.Routes, ui.Routes))))
		t.Cleanup(e.srv.Close)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { eng.Run(ctx) })
	if srv.Schedules != nil {
		wg.Go(func() { srv.Schedules.Run(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	t.Cleanup(e.releaseEarly) // runs first: a blocked step must not hold up shutdown
	e.admin = e.addUser(t, adminEmail, domain.RoleAdmin, false)
	e.reviewer = e.addUser(t, reviewerEmail, domain.RoleReviewer, false)
	e.founderA = e.addUser(t, founderAEmail, domain.RoleFounder, false)
	e.founderB = e.addUser(t, founderBEmail, domain.RoleFounder, false)
	return e
}

// addUser creates a user and returns the secret of a new API key of theirs.
func (e *apiEnv) addUser(t testing.TB, email string, role domain.Role, disabled bool) string {
	t.Helper()
	u, err := e.db.CreateUser(t.Context(), domain.User{
		ID: "u-" + email, Email: email, Name: string(role), Role: role, Disabled: disabled, CreatedAt: time.Now(),
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	e.userIDs[email] = u.ID
	_, secret := e.addKey(t, u.ID)
	return secret
}

// addKey creates an API key for a user and returns its id and secret.
func (e *apiEnv) addKey(t testing.TB, userID string) (id, secret string) {
	t.Helper()
	secret, prefix, hash := web.NewAPIKey()
	id = "k-" + prefix + "-" + fmt.Sprint(time.Now().UnixNano())
	if err := e.db.CreateAPIKey(t.Context(), domain.APIKey{ID: id, Name: "test", Prefix: prefix, UserID: userID, CreatedAt: time.Now()}, hash); err != nil {
		t.Fatal(err)
	}
	return id, secret
}

func newServer(t testing.TB, srv *web.Server) *httptest.Server {
	h := srv.Handler(api.Routes, ui.Routes)
	if srv.BasePath == "" { // under a base path, the document's server URL says so, and its paths are relative
		h = checkContract(t, h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs
}

func (e *apiEnv) releaseEarly() { e.releaseOnce.Do(func() { close(e.gate) }) }

// intake suspends for documents (schema-checked, assigned to the input's
// assignee) and completes with what the resume supplied.
func (e *apiEnv) intake() *domain.Workflow {
	return domain.NewWorkflow("intake", "1").
		Step("collect", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				ClaimID  string `json:"claimId"`
				Assignee string `json:"assignee"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("awaiting_documents",
				map[string]string{"claimId": in.ClaimID}, "finish",
				domain.WithResumeSchema(receiptSchema), domain.WithAssignee(in.Assignee))}}, nil
		}).
		Step("finish", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			e.finished.Add(1)
			var in domain.ResumePayload
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Complete(map[string]any{
				"checkpoint": in.Checkpoint, "documents": in.ResumeData,
			})}}, nil
		})
}

// paperwork asks its input's assignee for PDF or PNG documents and
// completes with the resume data.
func paperwork() *domain.Workflow {
	return domain.NewWorkflow("paperwork", "1").
		Step("ask", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				Assignee string `json:"assignee"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("awaiting_documentation", map[string]string{"doc": "statement"}, "done",
				domain.WithAssignee(in.Assignee), domain.WithResumeSchema(docSchema), domain.WithDocuments("application/pdf", "image/png"))}}, nil
		}).
		Step("done", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in domain.ResumePayload
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Complete(in.ResumeData)}}, nil
		})
}

// review asks for approval; paying is deferred until it is given.
func (e *apiEnv) review() *domain.Workflow {
	return domain.NewWorkflow("review", "1").
		Step("submit", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{
				domain.Review("awaiting_approval", req.Input),
				domain.Invoke("pay", req.Input),
			}}, nil
		}).
		Step("pay", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			e.paid.Add(1)
			return domain.StepResult{Commands: []domain.Command{domain.Complete(map[string]any{"paid": req.Input})}}, nil
		})
}

// delayWorkflow sleeps for the input's milliseconds.
func delayWorkflow() *domain.Workflow {
	return domain.NewWorkflow("delay", "1").
		Step("wait", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				MS int `json:"ms"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Sleep(time.Duration(in.MS)*time.Millisecond, nil, "woke")}}, nil
		}).
		Step("woke", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Output: map[string]bool{"woke": true}}, nil
		})
}

// early's first step is held on a gate before it pauses, so a test can
// resume the pause before it exists.
func (e *apiEnv) early() *domain.Workflow {
	return domain.NewWorkflow("early", "1").
		Step("prepare", func(ctx context.Context, req domain.StepRequest) (domain.StepResult, error) {
			select {
			case e.entered <- req.RunID:
			default:
			}
			select {
			case <-e.gate:
			case <-ctx.Done():
				return domain.StepResult{}, ctx.Err()
			}
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("awaiting_callback", map[string]string{"ref": "r-1"}, "after")}}, nil
		}).
		Step("after", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in domain.ResumePayload
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Complete(map[string]any{"saw": in.ResumeData, "checkpoint": in.Checkpoint})}}, nil
		})
}

// reply is an HTTP response, read whole.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.Status, r.Body) }

// call sends one request. A non-empty body is sent as application/json
// unless headers (name, value pairs) set a Content-Type. Every response must
// carry the security headers and no response may be a 5xx.
func (e *apiEnv) call(t testing.TB, method, path, key, body string, headers ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	base := e.srv.URL
	if e.api != nil {
		base += e.api.BasePath // the server may be mounted under a path
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	r := reply{Status: resp.StatusCode, Header: resp.Header, Body: b}
	if r.Status >= 500 && (r.Status != http.StatusServiceUnavailable || path != "/readyz") {
		t.Errorf("%s %s: server error %s", method, path, r)
	}
	if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s %s: X-Content-Type-Options = %q", method, path, got)
	}
	if got := r.Header.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("%s %s: Referrer-Policy = %q", method, path, got)
	}
	return r
}

// want fails the test unless r has the status.
func want(t testing.TB, r reply, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %s; want %d", r, status)
	}
}

// decode reads r's JSON body, which must have the status.
func decode[T any](t testing.TB, r reply, status int) T {
	t.Helper()
	want(t, r, status)
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("decode %s: %v", r, err)
	}
	return v
}

type runBody struct {
	ID              string           `json:"id"`
	WorkflowID      string           `json:"workflowId"`
	WorkflowVersion string           `json:"workflowVersion"`
	Status          string           `json:"status"`
	Input           json.RawMessage  `json:"input"`
	Output          json.RawMessage  `json:"output"`
	Error           *domain.RunError `json:"error"`
	CreatedAt       time.Time        `json:"createdAt"`
	UpdatedAt       time.Time        `json:"updatedAt"`
	Suspensions     []suspensionBody `json:"suspensions"`
	Awaiting        []struct {
		StepID       string `json:"stepId"`
		Kind         string `json:"kind"`
		Name         string `json:"name"`
		SuspensionID string `json:"suspensionId"`
	} `json:"awaiting"`
	WaitingFor      *waitingForBody      `json:"waitingFor"`
	PendingApproval *pendingApprovalBody `json:"pendingApproval"`
}

type waitingForBody struct {
	SignalName   string     `json:"signalName"`
	StepID       string     `json:"stepId"`
	Kind         string     `json:"kind"`
	SuspensionID string     `json:"suspensionId"`
	Deadline     *time.Time `json:"deadline"`
}

type pendingApprovalBody struct {
	ApprovalID   string `json:"approvalId"`
	SuspensionID string `json:"suspensionId"`
	StepID       string `json:"stepId"`
	Title        string `json:"title"`
	Description  string `json:"description"`
}

type suspensionBody struct {
	ID           string          `json:"id"`
	RunID        string          `json:"runId"`
	WorkflowID   string          `json:"workflowId"`
	StepName     string          `json:"stepName"`
	StepKey      string          `json:"stepKey"`
	Kind         string          `json:"kind"`
	Reason       string          `json:"reason"`
	Status       string          `json:"status"`
	Checkpoint   json.RawMessage `json:"checkpoint"`
	ResumeSchema json.RawMessage `json:"resumeSchema"`
	ResumeData   json.RawMessage `json:"resumeData"`
	Assignee     string          `json:"assignee"`
	Approvers    []string        `json:"approvers"`
	ApproverRole string          `json:"approverRole"`
	Decision     string          `json:"decision"`
	SuspendedAt  time.Time       `json:"suspendedAt"`
	ResumedAt    *time.Time      `json:"resumedAt"`
	ResumedBy    *string         `json:"resumedBy"`
	Group        string          `json:"group"`
	GroupKey     string          `json:"groupKey"`
	Branch       string          `json:"branch"`
}

type eventBody struct {
	Seq     int64           `json:"seq"`
	Type    string          `json:"type"`
	Step    string          `json:"step"`
	Payload json.RawMessage `json:"payload"`
}

// soaking reports whether make soak runs the tests (it sets
// TOLLGATE_SOAK_DURATION): tests that make test runs in a smaller variant,
// to keep it under its time, then run in full.
func soaking() bool { return os.Getenv("TOLLGATE_SOAK_DURATION") != "" }

type pageBody[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

type problemBody struct {
	Type      string              `json:"type"`
	Status    int                 `json:"status"`
	Code      string              `json:"code"`
	Detail    string              `json:"detail"`
	Instance  string              `json:"instance"`
	Errors    []domain.FieldError `json:"errors"`
	ResumedBy string              `json:"resumedBy"`
	ResumedAt *time.Time          `json:"resumedAt"`
	// WinnerSignalID and ResolvedAt say who won a lost signal race, and when.
	WinnerSignalID string     `json:"winnerSignalId"`
	ResolvedAt     *time.Time `json:"resolvedAt"`
}

// problem checks that r is an application/problem+json error with status
// and code, and returns it.
func problem(t testing.TB, r reply, status int, code string) problemBody {
	t.Helper()
	p := decode[problemBody](t, r, status)
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q; want application/problem+json (%s)", ct, r)
	}
	if p.Status != status || p.Code != code {
		t.Fatalf("problem = %s; want status %d, code %s", r, status, code)
	}
	return p
}

// hasParameter reports whether a problem lists an error about the query
// parameter name.
func hasParameter(p problemBody, name string) bool {
	return slices.ContainsFunc(p.Errors, func(f domain.FieldError) bool { return f.Parameter == name && f.Field == "" })
}

// hasField reports whether a problem lists a field error at field or below it.
func hasField(p problemBody, field string) bool {
	return slices.ContainsFunc(p.Errors, func(f domain.FieldError) bool {
		return f.Field == field || strings.HasPrefix(f.Field, field+"/")
	})
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// sameJSON compares documents by value; PostgreSQL's jsonb reformats them.
func sameJSON(t testing.TB, got, want json.RawMessage) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("decode %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		t.Fatalf("decode %s: %v", want, err)
	}
	return jsonString(a) == jsonString(b)
}

func (e *apiEnv) startRun(t testing.TB, workflowID string, input any) runBody {
	t.Helper()
	return decode[runBody](t, e.call(t, "POST", "/api/v1/workflows/"+workflowID+"/runs", e.admin, jsonString(map[string]any{"input": input})), http.StatusCreated)
}

func (e *apiEnv) run(t testing.TB, id string) runBody {
	t.Helper()
	return decode[runBody](t, e.call(t, "GET", "/api/v1/runs/"+id, e.admin, ""), http.StatusOK)
}

// receiveUntil reads ch until done accepts a value, and returns what it
// read, that value last. It fails the test if ch closes, or d passes,
// before what it waits for comes.
func receiveUntil[T any](t *testing.T, ch <-chan T, d time.Duration, what string, done func(T) bool) []T {
	t.Helper()
	var read []T
	timeout := time.After(d)
	for {
		select {
		case v, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended before %s; read %v", what, read)
			}
			read = append(read, v)
			if done(v) {
				return read
			}
		case <-timeout:
			t.Fatalf("no %s within %v; read %v", what, d, read)
		}
	}
}

// waitRun polls until the run has one of the statuses.
func (e *apiEnv) waitRun(t testing.TB, id string, statuses ...string) runBody {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := e.run(t, id)
		if slices.Contains(statuses, r.Status) {
			return r
		}
		if terminal := []string{"succeeded", "failed", "cancelled"}; slices.Contains(terminal, r.Status) || time.Now().After(deadline) {
			t.Fatalf("run %s is %s (error %+v); want one of %v", id, r.Status, r.Error, statuses)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *apiEnv) suspension(t testing.TB, id string) suspensionBody {
	t.Helper()
	return decode[suspensionBody](t, e.call(t, "GET", "/api/v1/suspensions/"+id, e.admin, ""), http.StatusOK)
}

// paused starts a run and waits until it is suspended on exactly one
// pending suspension.
func (e *apiEnv) paused(t testing.TB, workflowID string, input any) (runBody, suspensionBody) {
	t.Helper()
	run := e.startRun(t, workflowID, input)
	e.waitRun(t, run.ID, "suspended")
	p := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?status=pending&runId="+url.QueryEscape(run.ID), e.admin, ""), http.StatusOK)
	if len(p.Items) != 1 {
		t.Fatalf("run %s has %d pending suspensions; want 1", run.ID, len(p.Items))
	}
	return run, p.Items[0]
}

// resumeBody is a resume request of intake's pause with the given receipt
// ids.
func resumeBody(ids ...string) string {
	return jsonString(map[string]any{"resumeData": map[string]any{"receiptIds": ids}})
}

// stillPending checks that a refused request changed nothing.
func (e *apiEnv) stillPending(t testing.TB, s suspensionBody) {
	t.Helper()
	got := e.suspension(t, s.ID)
	if got.Status != "pending" || got.ResumedAt != nil || got.ResumedBy != nil || !bytes.Equal(got.ResumeData, []byte("null")) {
		t.Fatalf("suspension %s changed: %+v", s.ID, got)
	}
	if r := e.run(t, s.RunID); r.Status != "suspended" {
		t.Fatalf("run %s is %s; want suspended", s.RunID, r.Status)
	}
}
