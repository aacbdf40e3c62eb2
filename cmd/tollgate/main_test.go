package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

func TestMain(m *testing.M) {
	// The crash test runs this binary again as a real `tollgate serve`
	// process, with test workflows registered (see crash_test.go).
	if os.Getenv(crashChildEnv) == "1" {
		os.Exit(crashChild())
	}
	if os.Getenv(commandEnv) == "1" {
		main()
		os.Exit(0)
	}
	storagetest.Main(m)
}

// testKey is the bootstrap API key of servers started by tests.
const testKey = "tg_test_bootstrap_key_0123456789"

// syncBuffer is a bytes.Buffer that a server goroutine writes while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var runningLine = regexp.MustCompile(`Tollgate is running: open http://(\S+) `)

// envFunc returns a getenv that reads only env: tests never see the
// machine's TOLLGATE_* or DATABASE_URL variables.
func envFunc(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// syncURL is the sync form of a waitpoint's resume URL, which answers
// with what the run does next.
func syncURL(resumeURL string) string { return strings.Replace(resumeURL, "?", "/sync?", 1) }

// forEachDialect runs f in a parallel subtest per database, with env as
// the server's environment: "sqlite" has none (the data folder holds the
// database), "postgres" names a fresh database in DATABASE_URL.
func forEachDialect(t *testing.T, f func(t *testing.T, env map[string]string)) {
	t.Helper()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			if dialect == "postgres" {
				env["DATABASE_URL"] = storagetest.NewDatabase(t)
			}
			f(t, env)
		})
	}
}

// storedRun reads a run from db in the API's shape, for awaitStatus in
// tests that have no server.
func storedRun(db *storage.DB) func(context.Context, string) (apiRun, error) {
	return func(ctx context.Context, id string) (apiRun, error) {
		r, err := db.Run(ctx, id)
		run := apiRun{ID: r.ID, Status: string(r.Status)}
		if r.Error != nil {
			run.Error = &apiRunError{Code: r.Error.Code, Message: r.Error.Message}
		}
		return run, err
	}
}

// testServer is `tollgate serve` running in this process through run().
type testServer struct {
	URL    string // http://127.0.0.1:port
	Key    string
	Stdout *syncBuffer
	Stderr *syncBuffer
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error

	mu      sync.Mutex
	clients []*http.Client

	// env, when set, is the server's environment with TOLLGATE_DATA,
	// for commands run against its database (signIn).
	env map[string]string
}

// startServer runs `tollgate serve --addr 127.0.0.1:0 --data DATA` plus args
// with env as its whole environment and waits until it listens. Unless env
// names one, the bootstrap API key is testKey; unless args name one, the
// data folder is a fresh temporary folder.
func startServer(t testing.TB, env map[string]string, args ...string) *testServer {
	t.Helper()
	env = cloneEnv(env)
	if _, ok := env["TOLLGATE_BOOTSTRAP_API_KEY"]; !ok {
		env["TOLLGATE_BOOTSTRAP_API_KEY"] = testKey
	}
	argv := []string{"serve", "--addr", "127.0.0.1:0", "--log-level", "warn", "--shutdown-timeout", "5s"}
	if !slices.Contains(args, "--data") {
		dir := t.TempDir()
		argv = append(argv, "--data", dir)
		if env["DATABASE_URL"] == "" {
			// A fresh embedded database starts migrated, as it would
			// after its first start; the tests of migrating pass --data.
			if err := storagetest.FromTemplate(storage.Opts{DataDir: dir}); err != nil {
				t.Fatal(err)
			}
		}
	}
	argv = append(argv, args...)
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{Key: env["TOLLGATE_BOOTSTRAP_API_KEY"], Stdout: &syncBuffer{}, Stderr: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- run(ctx, argv, envFunc(env), s.Stdout, s.Stderr) }()
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("server stopped with %v", err)
		}
		if t.Failed() {
			t.Logf("server stdout:\n%s\nserver stderr:\n%s", s.Stdout, s.Stderr)
		}
	})
	deadline := time.After(30 * time.Second)
	for {
		if m := runningLine.FindStringSubmatch(s.Stdout.String()); m != nil {
			s.URL = "http://" + m[1]
			return s
		}
		select {
		case err := <-s.done:
			s.once.Do(func() { s.err = err })
			t.Fatalf("server exited before listening: %v\nstdout:\n%s\nstderr:\n%s", err, s.Stdout, s.Stderr)
		case <-deadline:
			t.Fatalf("server did not listen within 30s\nstdout:\n%s\nstderr:\n%s", s.Stdout, s.Stderr)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stop cancels the server's context and returns what run returned.
//
// The test's clients first close their idle connections: net/http's
// Shutdown waits up to 5s for a connection that was opened but never sent a
// request (the transport dials spares when requests run concurrently).
func (s *testServer) stop() error {
	s.once.Do(func() {
		s.mu.Lock()
		for _, hc := range s.clients {
			hc.CloseIdleConnections()
		}
		s.mu.Unlock()
		s.cancel()
		select {
		case s.err = <-s.done:
		case <-time.After(30 * time.Second):
			s.err = errors.New("run did not return within 30s of cancellation")
		}
	})
	return s.err
}

func cloneEnv(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// client calls the JSON API.
type client struct {
	base, key string
	hc        *http.Client
}

func (s *testServer) client() *client {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
	s.mu.Lock()
	s.clients = append(s.clients, hc)
	s.mu.Unlock()
	return &client{base: s.URL, key: s.Key, hc: hc}
}

// response is an API answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// decode unmarshals the body into v, reporting the body on failure.
func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %d response %s: %v", r.Status, r.Body, err)
	}
}

// code is the problem code of an error response.
func (r response) code() string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(r.Body, &p)
	return p.Code
}

// do sends one request; body, if not nil, is encoded as JSON. hdr holds
// name, value pairs.
func (c *client) do(ctx context.Context, method, path string, body any, hdr ...string) (response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return response{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// call is do that fails the test on a transport error or another status
// than want.
func (c *client) call(t testing.TB, want int, method, path string, body any, hdr ...string) response {
	t.Helper()
	r, err := c.do(t.Context(), method, path, body, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if r.Status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	return r
}

// The API's shapes, as a client sees them.
type apiRun struct {
	ID          string          `json:"id"`
	WorkflowID  string          `json:"workflowId"`
	Status      string          `json:"status"`
	Input       json.RawMessage `json:"input"`
	Output      json.RawMessage `json:"output"`
	Error       *apiRunError    `json:"error"`
	Suspensions []apiSuspension `json:"suspensions"`
}

type apiRunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type apiSuspension struct {
	ID            string          `json:"id"`
	RunID         string          `json:"runId"`
	StepName      string          `json:"stepName"`
	StepKey       string          `json:"stepKey"`
	Kind          string          `json:"kind"`
	Reason        string          `json:"reason"`
	Status        string          `json:"status"`
	Checkpoint    json.RawMessage `json:"checkpoint"`
	ResumeStep    string          `json:"resumeStep"`
	ResumeSchema  json.RawMessage `json:"resumeSchema"`
	ResumeData    json.RawMessage `json:"resumeData"`
	Assignee      string          `json:"assignee"`
	Title         string          `json:"title"`
	Fields        []apiField      `json:"fields"`
	ReasonLabel   string          `json:"reasonLabel"`
	Instructions  string          `json:"instructions"`
	Accept        []string        `json:"accept"`
	ResumeURL     string          `json:"resumeUrl"`
	Decision      string          `json:"decision"`
	DeferredCount int             `json:"deferredCommands"`
	WakeAt        *time.Time      `json:"wakeAt"`
	ResumedBy     *string         `json:"resumedBy"`
	Branch        string          `json:"branch"`
}

type apiField struct {
	Label  string          `json:"label"`
	Value  json.RawMessage `json:"value"`
	Format string          `json:"format"`
}

// fieldsText is fields as "label=value(format)" pairs, to compare in one go.
func fieldsText(fs []apiField) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Label + "=" + string(f.Value) + "(" + f.Format + ")"
	}
	return strings.Join(parts, " ")
}

type apiEvent struct {
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Step      string          `json:"step"`
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"createdAt"`
}

type apiPage[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

func (c *client) startRun(t testing.TB, workflow string, input any, hdr ...string) apiRun {
	t.Helper()
	var run apiRun
	c.call(t, http.StatusCreated, "POST", "/api/v1/workflows/"+workflow+"/runs", map[string]any{"input": input}, hdr...).decode(t, &run)
	return run
}

// suspensions lists the first page of GET /api/v1/suspensions?query.
func (c *client) suspensions(t testing.TB, query string) []apiSuspension {
	t.Helper()
	var p apiPage[apiSuspension]
	c.call(t, http.StatusOK, "GET", "/api/v1/suspensions?"+query, nil).decode(t, &p)
	return p.Items
}

func (c *client) run(t testing.TB, id string) apiRun {
	t.Helper()
	var run apiRun
	c.call(t, http.StatusOK, "GET", "/api/v1/runs/"+id, nil).decode(t, &run)
	return run
}

// events reads a run's whole log, page after page.
func (c *client) events(t testing.TB, runID string) []apiEvent {
	t.Helper()
	var out []apiEvent
	for cursor := ""; ; {
		var p apiPage[apiEvent]
		c.call(t, http.StatusOK, "GET", "/api/v1/runs/"+runID+"/events?limit=500&cursor="+cursor, nil).decode(t, &p)
		out = append(out, p.Items...)
		if p.NextCursor == "" {
			return out
		}
		cursor = p.NextCursor
	}
}

// getRun is GET /api/v1/runs/{id} for callers that handle errors
// themselves (goroutines, benchmarks).
func (c *client) getRun(ctx context.Context, id string) (apiRun, error) {
	return runFrom(c.do(ctx, "GET", "/api/v1/runs/"+id, nil))
}

// runFrom decodes the run of a GET /api/v1/runs/{id} answer.
func runFrom(r response, err error) (apiRun, error) {
	var run apiRun
	if err != nil {
		return run, err
	}
	if r.Status != http.StatusOK {
		return run, fmt.Errorf("GET run: %d %s", r.Status, r.Body)
	}
	return run, json.Unmarshal(r.Body, &run)
}

// awaitStatus reads run id with get every interval until it has status.
// A run that ends in another terminal status, a failed read and the end of
// ctx stop the wait with an error; the run last read is returned either way.
func awaitStatus(ctx context.Context, get func(context.Context, string) (apiRun, error), id, status string, every time.Duration) (apiRun, error) {
	var run apiRun
	timedOut := func() (apiRun, error) {
		return run, fmt.Errorf("run %s is %q, want %s: %w", id, run.Status, status, context.Cause(ctx))
	}
	for {
		got, err := get(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return timedOut()
			}
			return run, err
		}
		run = got
		if run.Status == status {
			return run, nil
		}
		if domain.RunStatus(run.Status).Terminal() {
			return run, fmt.Errorf("run %s is %s (error %+v), want %s", id, run.Status, run.Error, status)
		}
		select {
		case <-ctx.Done():
			return timedOut()
		case <-time.After(every):
		}
	}
}

// waitStatus polls a run for up to 20s until it has status; a run that
// ends in another terminal status fails the test at once.
func (c *client) waitStatus(t testing.TB, id, status string) apiRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	run, err := awaitStatus(ctx, c.getRun, id, status, 10*time.Millisecond)
	if err != nil {
		t.Error(err) // first, as reading the events may fail the test too
		t.Fatalf("events of run %s: %s", id, eventTypes(c.events(t, id)))
	}
	return run
}

// register PUTs a workflow document at the id and version it names and
// expects it to be created.
func (c *client) register(t testing.TB, doc string) response {
	t.Helper()
	var d struct{ ID, Version string }
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatalf("workflow document %s: %v", doc, err)
	}
	return c.call(t, http.StatusCreated, "PUT", "/api/v1/workflows/"+d.ID+"/versions/"+d.Version, json.RawMessage(doc))
}

func eventTypes(es []apiEvent) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%d:%s", e.Seq, e.Type)
		if e.Step != "" {
			fmt.Fprintf(&b, "(%s)", e.Step)
		}
		b.WriteByte(' ')
	}
	return b.String()
}

// checkLog checks that a run's events are numbered 1, 2, 3… and returns how
// often each "TYPE" and "TYPE(step)" occurs.
func checkLog(t testing.TB, es []apiEvent) map[string]int {
	t.Helper()
	n := map[string]int{}
	for i, e := range es {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d; the log is %s", i+1, e.Seq, eventTypes(es))
		}
		n[e.Type]++
		if e.Step != "" {
			n[e.Type+"("+e.Step+")"]++
		}
	}
	return n
}

func jsonEqual(t testing.TB, what string, got json.RawMessage, want any) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", what, got, err)
	}
	wb, _ := json.Marshal(want)
	_ = json.Unmarshal(wb, &w)
	gb, _ := json.Marshal(g)
	wb, _ = json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("%s = %s, want %s", what, gb, wb)
	}
}

func TestNoCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(t.Context(), nil, envFunc(nil), &out, &errb); err == nil || !strings.Contains(errb.String(), "tollgate serve") {
		t.Errorf("run() = %v with stderr %q; want an error and the usage", err, errb.String())
	}
	errb.Reset()
	if err := run(t.Context(), []string{"frobnicate"}, envFunc(nil), &out, &errb); err == nil || !strings.Contains(err.Error(), "frobnicate") {
		t.Errorf("run(frobnicate) = %v; want an unknown-command error", err)
	}
	out.Reset()
	if err := run(t.Context(), []string{"help"}, envFunc(nil), &out, &errb); err != nil || !strings.Contains(out.String(), "Usage: tollgate <command>") || !strings.Contains(out.String(), "runs list") {
		t.Errorf("run(help) = %v with stdout %q; want the usage", err, out.String())
	}
}

func TestServeHelp(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"serve", "--help"}, envFunc(nil), &out, &errb)
	if err != nil || exitCode(err) != exitDone {
		t.Fatalf("serve --help returned %v, want nothing (exit 0)", err)
	}
	help := out.String() + errb.String()
	for _, want := range []string{"Usage: tollgate serve", "--addr", "TOLLGATE_ADDR", "--data", "TOLLGATE_DATA", "--database-url", "DATABASE_URL", "--job-lease", "--shutdown-timeout", "--workers", "--retention", "TOLLGATE_RETENTION", "--redact-headers", "TOLLGATE_REDACT_HEADERS"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help does not mention %s:\n%s", want, help)
		}
	}
	if err := run(t.Context(), []string{"serve", "--no-such-flag"}, envFunc(nil), &out, &errb); err == nil {
		t.Error("serve --no-such-flag succeeded")
	}
	if err := run(t.Context(), []string{"serve"}, envFunc(map[string]string{"TOLLGATE_WORKERS": "many"}), &out, &errb); err == nil || !strings.Contains(err.Error(), "TOLLGATE_WORKERS") {
		t.Errorf("serve with TOLLGATE_WORKERS=many returned %v, want an error naming the variable", err)
	}
	if err := run(t.Context(), []string{"serve"}, envFunc(map[string]string{"TOLLGATE_RETENTION": "-1h"}), &out, &errb); err == nil || !strings.Contains(err.Error(), "--retention") {
		t.Errorf("serve with TOLLGATE_RETENTION=-1h returned %v, want an error naming the flag", err)
	}
	if err := run(t.Context(), []string{"serve", "--redact-headers", "X-Signature, not a name"}, envFunc(nil), &out, &errb); err == nil || !strings.Contains(err.Error(), "--redact-headers") {
		t.Errorf("serve --redact-headers with a bad name returned %v, want an error naming the flag", err)
	}
	if err := run(t.Context(), []string{"serve", "--data", t.TempDir(), "--database-url", "mysql://x"}, envFunc(nil), &out, &errb); err == nil || !strings.Contains(err.Error(), "postgres://") {
		t.Errorf("serve with a mysql URL returned %v, want an error", err)
	}
}

var apiKeyLine = regexp.MustCompile(`API key:\s+(tg_\S+)`)

// adminEmailOf is the email of the first admin s printed at start.
func adminEmailOf(t testing.TB, s *testServer) string {
	t.Helper()
	m := regexp.MustCompile(`email:\s+(\S+)`).FindStringSubmatch(s.Stdout.String())
	if m == nil {
		t.Fatalf("stdout names no first admin:\n%s", s.Stdout)
	}
	return m[1]
}

func TestBootstrap(t *testing.T) {
	t.Run("generated", func(t *testing.T) {
		data := t.TempDir()
		s := startServer(t, map[string]string{"TOLLGATE_BOOTSTRAP_API_KEY": ""}, "--data", data)
		out := s.Stdout.String()
		for _, want := range []string{"Created the first admin", "password: "} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
		// No fixed, guessable admin login: the address is generated.
		email := adminEmailOf(t, s)
		if !regexp.MustCompile(`^admin-[0-9a-f]{6}@tollgate\.local$`).MatchString(email) {
			t.Errorf("the generated admin's email is %q, want admin-<6 hex>@tollgate.local", email)
		}
		other := startServer(t, map[string]string{"TOLLGATE_BOOTSTRAP_API_KEY": ""})
		if adminEmailOf(t, other) == email {
			t.Errorf("two fresh databases got the same admin email %q", email)
		}
		m := apiKeyLine.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("stdout shows no API key:\n%s", out)
		}
		c := s.client()
		c.key = m[1]
		c.call(t, http.StatusOK, "GET", "/api/v1/workflows", nil)
		c.key = "tg_wrong_key_wrong_key_wrong_key"
		c.call(t, http.StatusUnauthorized, "GET", "/api/v1/workflows", nil)
		if err := s.stop(); err != nil {
			t.Fatal(err)
		}
		// A second start on the same database creates nobody.
		s2 := startServer(t, map[string]string{"TOLLGATE_BOOTSTRAP_API_KEY": ""}, "--data", data)
		if out := s2.Stdout.String(); strings.Contains(out, "Created the first admin") {
			t.Errorf("second start bootstrapped again:\n%s", out)
		}
		c2 := s2.client()
		c2.key = m[1]
		c2.call(t, http.StatusOK, "GET", "/api/v1/workflows", nil)
	})
	t.Run("from environment", func(t *testing.T) {
		s := startServer(t, map[string]string{"TOLLGATE_ADMIN_EMAIL": "root@example.com"})
		out := s.Stdout.String()
		if !strings.Contains(out, "email:    root@example.com") || !strings.Contains(out, "API key:  from TOLLGATE_BOOTSTRAP_API_KEY") {
			t.Errorf("stdout:\n%s", out)
		}
		if strings.Contains(out, testKey) {
			t.Errorf("stdout shows the key from the environment:\n%s", out)
		}
		var p apiPage[struct {
			ID string `json:"id"`
		}]
		s.client().call(t, http.StatusOK, "GET", "/api/v1/workflows", nil).decode(t, &p)
		var ids []string
		for _, w := range p.Items {
			ids = append(ids, w.ID)
		}
		if !slices.Contains(ids, "claim-verification") || !slices.Contains(ids, "expense-approval") {
			t.Errorf("workflows = %v", ids)
		}
	})
	t.Run("short key", func(t *testing.T) {
		data := t.TempDir()
		var out, errb syncBuffer
		err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--data", data},
			envFunc(map[string]string{"TOLLGATE_BOOTSTRAP_API_KEY": "too-short"}), &out, &errb)
		if err == nil {
			t.Fatal("serve with a short bootstrap key succeeded")
		}
		if !strings.Contains(err.Error(), "TOLLGATE_BOOTSTRAP_API_KEY") {
			t.Errorf("the error does not name the variable: %v", err)
		}
		// The failed start must not have used up the bootstrap: a corrected
		// key still creates the admin.
		s := startServer(t, nil, "--data", data)
		if !strings.Contains(s.Stdout.String(), "Created the first admin") {
			t.Fatalf("no admin after correcting the key:\n%s", s.Stdout)
		}
		s.client().call(t, http.StatusOK, "GET", "/api/v1/workflows", nil)
	})
	t.Run("address in use", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		data := t.TempDir()
		var out, errb syncBuffer
		err = run(t.Context(), []string{"serve", "--addr", taken.Addr().String(), "--data", data}, envFunc(nil), &out, &errb)
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("serve on a taken address: %v", err)
		}
		// The admin is made once the address is bound: nobody was created
		// whose password went to a start that failed.
		if strings.Contains(out.String(), "Created the first admin") {
			t.Errorf("a start that could not listen created the admin:\n%s", out.String())
		}
		s := startServer(t, nil, "--data", data)
		if !strings.Contains(s.Stdout.String(), "Created the first admin") {
			t.Fatalf("no admin at the first start that listened:\n%s", s.Stdout)
		}
	})
}

func TestGracefulShutdown(t *testing.T) {
	s := startServer(t, nil, "--shutdown-timeout", "3s")
	c := s.client()
	run := c.startRun(t, "claim-verification", map[string]any{"claimId": "c-1", "claimText": "We have 12 customers", "founderEmail": "ada@example.com"})
	c.waitStatus(t, run.ID, "suspended")
	start := time.Now()
	if err := s.stop(); err != nil {
		t.Fatalf("run returned %v after cancellation, want nil", err)
	}
	if d := time.Since(start); d > 3*time.Second+time.Second {
		t.Errorf("shutdown took %v with --shutdown-timeout 3s", d)
	}
	if _, err := c.do(context.Background(), "GET", "/healthz", nil); err == nil {
		t.Error("the server still answers after run returned")
	}
}

// A shutdown ends the attach streams it holds open at once, rather than
// waiting for its timeout with them.
func TestShutdownEndsAttachStreams(t *testing.T) {
	s := startServer(t, nil, "--shutdown-timeout", "10s")
	c := s.client()
	run := c.startRun(t, "claim-verification", map[string]any{"claimId": "c-1", "claimText": "We have 12 customers", "founderEmail": "ada@example.com"})
	c.waitStatus(t, run.ID, "suspended")
	req, err := http.NewRequestWithContext(t.Context(), "GET", c.base+"/api/v1/runs/"+run.ID+"/attach", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "event: RUN_STARTED") {
		t.Fatalf("the stream began with %q, %v", line, err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, br)
		ended <- err
	}()
	start := time.Now()
	if err := s.stop(); err != nil {
		t.Fatalf("run returned %v after cancellation, want nil", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v with an attach stream open; it should end the stream at once", d)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Error("the attach stream was still open after the server stopped")
	}
}

// A shutdown timeout shorter than net/http's own five-second grace for
// connections that never sent a request still ends serve cleanly, on time.
func TestShutdownWithSilentConnections(t *testing.T) {
	s := startServer(t, nil, "--shutdown-timeout", "1s")
	c := s.client()
	c.call(t, http.StatusOK, "GET", "/api/v1/workflows", nil) // leaves an idle keep-alive connection
	silent, err := net.Dial("tcp", strings.TrimPrefix(c.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	time.Sleep(100 * time.Millisecond) // accepted, and never a request
	start := time.Now()
	if err := s.stop(); err != nil {
		t.Fatalf("serve returned %v with a silent connection open; want nil", err)
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("shutdown took %v with --shutdown-timeout 1s", d)
	}
}

// TestAdminCommands runs migrate, user add and apikey create against one
// data folder, then serves it and uses the keys they made.
func TestAdminCommands(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"TOLLGATE_DATA": data, "TOLLGATE_LOG_LEVEL": "warn"}
	cmd := func(getenv map[string]string, args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(t.Context(), args, envFunc(getenv), &out, &errb)
		return out.String() + errb.String(), err
	}
	for range 2 { // migrate is idempotent
		out, err := cmd(env, "migrate")
		if err != nil || !strings.Contains(out, "Migrations are current.") {
			t.Fatalf("migrate: %v\n%s", err, out)
		}
	}
	if _, err := os.Stat(data + "/tollgate.db"); err != nil {
		t.Fatalf("migrate with TOLLGATE_DATA made no database there: %v", err)
	}

	withPassword := cloneEnv(env)
	withPassword["TOLLGATE_PASSWORD"] = "a long enough password"
	out, err := cmd(withPassword, "user", "add", "--email", "rev@example.com", "--role", "reviewer", "--name", "Rev")
	if err != nil || !strings.Contains(out, "Created reviewer rev@example.com (id ") || strings.Contains(out, "Password") {
		t.Fatalf("user add with TOLLGATE_PASSWORD: %v\n%s", err, out)
	}
	for weak, why := range map[string]string{"password1234": "too common", "123456789012": "run of letters", strings.Repeat(" ", 12): "only spaces", "weak@example.com": "email", "weak@example.com2026": "email"} {
		withWeak := cloneEnv(env)
		withWeak["TOLLGATE_PASSWORD"] = weak
		if out, err := cmd(withWeak, "user", "add", "--email", "weak@example.com", "--role", "reviewer"); err == nil || !strings.Contains(err.Error(), "TOLLGATE_PASSWORD") || !strings.Contains(err.Error(), why) {
			t.Errorf("user add with TOLLGATE_PASSWORD=%q: %v, want a refusal saying %q\n%s", weak, err, why, out)
		}
	}
	out, err = cmd(env, "user", "add", "--email", "ada@example.com", "--role", "founder")
	if err != nil || !strings.Contains(out, "Created founder ada@example.com") || !strings.Contains(out, "Password (shown once): ") {
		t.Fatalf("user add without a password: %v\n%s", err, out)
	}
	if _, err := cmd(env, "user", "add", "--email", "rev@example.com", "--role", "reviewer"); err == nil {
		t.Error("adding the same email twice succeeded")
	}
	if _, err := cmd(env, "user", "add", "--email", "x@example.com", "--role", "overlord"); err == nil {
		t.Error("user add --role overlord succeeded")
	}
	if _, err := cmd(env, "user", "add", "--email", "not-an-address"); err == nil {
		t.Error("user add with a bad email succeeded")
	}
	if _, err := cmd(env, "user", "list"); err == nil {
		t.Error("user list succeeded")
	}

	keyLine := regexp.MustCompile(`API key for (\S+) \(shown once\): (tg_\S+)`)
	out, err = cmd(env, "apikey", "create", "--email", "rev@example.com", "--name", "ci")
	m := keyLine.FindStringSubmatch(out)
	if err != nil || m == nil || m[1] != "rev@example.com" {
		t.Fatalf("apikey create: %v\n%s", err, out)
	}
	reviewerKey := m[2]
	out, err = cmd(env, "apikey", "create", "--email", "ada@example.com")
	m = keyLine.FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("apikey create for the founder: %v\n%s", err, out)
	}
	founderKey := m[2]
	if out, err := cmd(env, "apikey", "create", "--email", "nobody@example.com"); err == nil || !strings.Contains(err.Error(), "nobody@example.com") {
		t.Errorf("apikey create for an unknown user: %v\n%s", err, out)
	}
	if _, err := cmd(env, "apikey", "revoke"); err == nil {
		t.Error("apikey revoke succeeded")
	}

	// Users exist, so serving this database bootstraps nobody; the keys work
	// with their owners' roles.
	s := startServer(t, map[string]string{"TOLLGATE_BOOTSTRAP_API_KEY": ""}, "--data", data, "--no-migrate")
	if strings.Contains(s.Stdout.String(), "Created the first admin") {
		t.Errorf("serve bootstrapped a database that has users:\n%s", s.Stdout)
	}
	c := s.client()
	c.key = reviewerKey
	c.call(t, http.StatusOK, "GET", "/api/v1/runs", nil)
	run := c.startRun(t, "claim-verification", map[string]any{"claimId": "c-9", "claimText": "Up 40%", "founderEmail": "ada@example.com"})
	c.waitStatus(t, run.ID, "suspended")
	c.key = founderKey
	c.call(t, http.StatusForbidden, "GET", "/api/v1/runs", nil)
	// The examples are for staff to start: a founder could verify their own
	// claim, or have the drip campaign mail anyone.
	for _, wf := range []string{"claim-verification", "expense-approval", "drip-campaign", "payment-pipeline"} {
		if r := c.call(t, http.StatusForbidden, "POST", "/api/v1/workflows/"+wf+"/runs", map[string]any{"input": map[string]any{"claimId": "c-10", "claimText": "Up 90%", "founderEmail": "ada@example.com"}}); r.code() != "start_forbidden" {
			t.Errorf("a founder starting %s: %s", wf, r.Body)
		}
	}
	// Their one request, in their page's terms: no engine internals.
	if got := c.suspensions(t, "runId="+run.ID); len(got) != 1 || !strings.HasPrefix(got[0].Title, "Documents for") || got[0].RunID != "" || got[0].StepKey != "" {
		t.Errorf("the founder sees %+v, want their one suspension as their page shows it", got)
	}
}

func TestNoMigrateRefusesAnEmptyDatabase(t *testing.T) {
	var out, errb syncBuffer
	err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--no-migrate"}, envFunc(nil), &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "tollgate migrate") {
		t.Fatalf("serve --no-migrate on an empty database returned %v", err)
	}
}

func TestExamples(t *testing.T) {
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		data := t.TempDir()
		s := startServer(t, env, "--data", data)
		if env["DATABASE_URL"] != "" && !strings.Contains(s.Stdout.String(), "PostgreSQL at postgres://…@") {
			t.Errorf("stdout does not name PostgreSQL (without its credentials):\n%s", s.Stdout)
		}
		s.env = cloneEnv(env)
		s.env["TOLLGATE_DATA"] = data
		testExamples(t, s)
	})
}

// testExamples drives the example workflows through the HTTP API, and
// a founder's upload through the web app.
func testExamples(t *testing.T, s *testServer) {
	c := s.client()
	t.Run("claim-verification", func(t *testing.T) {
		input := map[string]any{"claimId": "c-1", "claimText": "Revenue grew 300% in 2025", "founderEmail": "ada@example.com"}
		first := c.call(t, http.StatusCreated, "POST", "/api/v1/workflows/claim-verification/runs", map[string]any{"input": input}, "Idempotency-Key", "claim-c-1")
		var run apiRun
		first.decode(t, &run)
		if loc := first.Header.Get("Location"); loc != "/api/v1/runs/"+run.ID {
			t.Errorf("Location = %q", loc)
		}
		again := c.call(t, http.StatusCreated, "POST", "/api/v1/workflows/claim-verification/runs", map[string]any{"input": input}, "Idempotency-Key", "claim-c-1")
		var replay apiRun
		again.decode(t, &replay)
		if replay.ID != run.ID || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("a repeated start made run %s (replayed %q), want %s", replay.ID, again.Header.Get("Idempotent-Replayed"), run.ID)
		}
		c.waitStatus(t, run.ID, "suspended")

		pending := c.suspensions(t, "status=pending&reason=awaiting_documentation&runId="+run.ID)
		if len(pending) != 1 {
			t.Fatalf("pending suspensions of the run: %+v", pending)
		}
		sp := pending[0]
		if sp.Reason != "awaiting_documentation" || sp.Kind != "input" || sp.Status != "pending" || sp.StepName != "verifyClaim" ||
			sp.ResumeStep != "handleDocumentation" || sp.Assignee != "ada@example.com" || len(sp.ResumeSchema) == 0 {
			t.Errorf("suspension = %+v", sp)
		}
		jsonEqual(t, "checkpoint", sp.Checkpoint, map[string]any{"claimId": "c-1", "claimText": "Revenue grew 300% in 2025", "requestedDocType": "financial_statement"})
		if sp.Title != "Documents for: Revenue grew 300% in 2025" || sp.ReasonLabel != "Documents needed" ||
			fieldsText(sp.Fields) != `Claim="Revenue grew 300% in 2025"(text) Founder="ada@example.com"(email) Document asked for="Financial statement"(text)` {
			t.Errorf("presentation: %q %q %s", sp.Title, sp.ReasonLabel, fieldsText(sp.Fields))
		}

		// Data that breaks the schema is refused and changes nothing.
		bad := c.call(t, http.StatusUnprocessableEntity, "POST", "/api/v1/suspensions/"+sp.ID+"/resume", map[string]any{"resumeData": map[string]any{"documentIds": []string{}}})
		if bad.code() == "" {
			t.Errorf("422 without a code: %s", bad.Body)
		}
		// Documents nobody uploaded verify nothing: refused, nothing changes.
		madeUp := c.call(t, http.StatusUnprocessableEntity, "POST", "/api/v1/suspensions/"+sp.ID+"/resume", map[string]any{"resumeData": map[string]any{"documentIds": []string{"made-up"}}})
		if madeUp.code() != "unknown_document" || !strings.Contains(string(madeUp.Body), `"/resumeData/documentIds/0"`) {
			t.Errorf("made-up document ids: %s", madeUp.Body)
		}
		if got := c.suspensions(t, "status=pending&runId="+run.ID); len(got) != 1 {
			t.Fatalf("after a refused resume, pending suspensions %+v", got)
		}
		// The founder uploads a real statement: its id verifies the claim.
		founder := s.signIn(t, "ada@example.com", "founder")
		if status, body := founder.upload(t, "/suspensions/"+sp.ID+"/documents", "statement.pdf", []byte("%PDF-1.7\n%%EOF\n")); status != http.StatusSeeOther {
			t.Fatalf("upload = %d: %s", status, body)
		}
		var resumed apiSuspension
		c.call(t, http.StatusOK, "GET", "/api/v1/suspensions/"+sp.ID, nil).decode(t, &resumed)
		var rd struct {
			DocumentIDs []string `json:"documentIds"`
		}
		if err := json.Unmarshal(resumed.ResumeData, &rd); err != nil || len(rd.DocumentIDs) != 1 || resumed.Status != "resumed" ||
			resumed.ResumedBy == nil || *resumed.ResumedBy != "ada@example.com" {
			t.Fatalf("resumed suspension = %+v", resumed)
		}
		if r := c.call(t, http.StatusConflict, "POST", "/api/v1/suspensions/"+sp.ID+"/resume", map[string]any{"resumeData": map[string]any{"documentIds": rd.DocumentIDs}}); r.code() != "already_resumed" {
			t.Errorf("second resume: code %q: %s", r.code(), r.Body)
		}
		done := c.waitStatus(t, run.ID, "succeeded")
		jsonEqual(t, "output", done.Output, map[string]any{"claimId": "c-1", "verdict": "verified", "method": "documentation", "documentType": "financial_statement", "documentIds": rd.DocumentIDs})

		n := checkLog(t, c.events(t, run.ID))
		for typ, want := range map[string]int{"RUN_CREATED": 1, "STEP_COMPLETED(verifyClaim)": 1, "VERIFICATION_SUSPENDED": 1, "WORKFLOW_PAUSED": 1, "RUN_RESUMED": 1, "STEP_COMPLETED(handleDocumentation)": 1, "RUN_SUCCEEDED": 1} {
			if n[typ] != want {
				t.Errorf("%s occurs %d times, want %d (%v)", typ, n[typ], want, n)
			}
		}
	})
	t.Run("claim without figures", func(t *testing.T) {
		run := c.startRun(t, "claim-verification", map[string]any{"claimId": "c-2", "claimText": "We love our customers", "founderEmail": "ada@example.com"})
		done := c.waitStatus(t, run.ID, "succeeded")
		jsonEqual(t, "output", done.Output, map[string]any{"claimId": "c-2", "verdict": "verified", "method": "no_figures_stated"})
	})
	t.Run("invalid claim", func(t *testing.T) {
		run := c.startRun(t, "claim-verification", map[string]any{"claimText": "no id"})
		done := c.waitStatus(t, run.ID, "failed")
		if done.Error == nil || done.Error.Code != "invalid_input" {
			t.Errorf("error = %+v", done.Error)
		}
	})
	expense := func(t *testing.T) (apiRun, apiSuspension) {
		run := c.startRun(t, "expense-approval", map[string]any{"amount": 120.5, "description": "Conference ticket", "requester": "rita@example.com", "submittedOn": "2026-04-15"})
		c.waitStatus(t, run.ID, "suspended")
		approvals := c.suspensions(t, "kind=approval&runId="+run.ID)
		if len(approvals) != 1 {
			t.Fatalf("approval suspensions of the run: %+v", approvals)
		}
		sp := approvals[0]
		if sp.Reason != "awaiting_approval" || sp.Status != "pending" || sp.DeferredCount != 1 {
			t.Errorf("suspension = %+v", sp)
		}
		jsonEqual(t, "checkpoint", sp.Checkpoint, map[string]any{"amount": 120.5, "description": "Conference ticket", "requester": "rita@example.com", "submittedOn": "2026-04-15"})
		if sp.Title != "Expense: Conference ticket — €120.50" || sp.ReasonLabel != "Expense approval" ||
			fieldsText(sp.Fields) != `Amount=120.5(money:EUR) Requester="rita@example.com"(email) Submitted="2026-04-15"(date)` {
			t.Errorf("presentation: %q %q %s", sp.Title, sp.ReasonLabel, fieldsText(sp.Fields))
		}
		// A review is decided, not resumed with data.
		c.call(t, http.StatusUnprocessableEntity, "POST", "/api/v1/suspensions/"+sp.ID+"/resume", map[string]any{"resumeData": map[string]any{"approved": true}})
		return run, sp
	}
	t.Run("expense approved", func(t *testing.T) {
		run, sp := expense(t)
		var decided apiSuspension
		c.call(t, http.StatusOK, "POST", "/api/v1/suspensions/"+sp.ID+"/approve", map[string]any{"comment": "Within budget"}).decode(t, &decided)
		if decided.Decision != "approved" {
			t.Errorf("decision = %q", decided.Decision)
		}
		// The same person's second decision is a second vote.
		if r := c.call(t, http.StatusConflict, "POST", "/api/v1/suspensions/"+sp.ID+"/reject", map[string]any{"comment": "changed my mind"}); r.code() != "already_voted" {
			t.Errorf("reject after approve: code %q", r.code())
		}
		done := c.waitStatus(t, run.ID, "succeeded")
		jsonEqual(t, "output", done.Output, map[string]any{"reimbursed": 120.5, "description": "Conference ticket", "reference": "reimb-" + run.ID})
		n := checkLog(t, c.events(t, run.ID))
		if n["REVIEW_APPROVED"] != 1 || n["STEP_COMPLETED(reimburse)"] != 1 || n["RUN_SUCCEEDED"] != 1 {
			t.Errorf("events: %v", n)
		}
	})
	t.Run("expense rejected", func(t *testing.T) {
		run, sp := expense(t)
		c.call(t, http.StatusOK, "POST", "/api/v1/suspensions/"+sp.ID+"/reject", map[string]any{"comment": "Too expensive"})
		done := c.waitStatus(t, run.ID, "failed")
		if done.Error == nil || done.Error.Code != "rejected" || !strings.Contains(done.Error.Message, "Too expensive") {
			t.Errorf("error = %+v", done.Error)
		}
		n := checkLog(t, c.events(t, run.ID))
		if n["REVIEW_REJECTED"] != 1 || n["COMMANDS_DISCARDED"] != 1 || n["STEP_COMPLETED(reimburse)"] != 0 || n["RUN_FAILED"] != 1 {
			t.Errorf("events: %v", n)
		}
	})
	t.Run("payment pipeline", func(t *testing.T) {
		run := c.startRun(t, "payment-pipeline", map[string]any{"userId": "u-1", "amount": 120})
		c.waitStatus(t, run.ID, "suspended")
		wait := c.suspensions(t, "status=pending&runId="+run.ID)
		if len(wait) != 1 || wait[0].Title != "Payment from Ada Lovelace" || wait[0].ReasonLabel != "Payment awaited" ||
			fieldsText(wait[0].Fields) != `Expected=120(money:EUR) Customer="ada@example.com"(email)` {
			t.Fatalf("the payment wait: %+v", wait)
		}
		c.call(t, http.StatusOK, "POST", "/api/v1/runs/"+run.ID+"/signals", map[string]any{"name": "payment", "signalId": "pay-1", "payload": map[string]any{"amount": 120, "reference": "ref-1"}})
		var approval []apiSuspension
		for deadline := time.Now().Add(20 * time.Second); len(approval) != 1; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the payout approval never came")
			}
			approval = c.suspensions(t, "status=pending&kind=approval&runId="+run.ID)
		}
		if sp := approval[0]; sp.Title != "Pay out 120 EUR to Ada Lovelace?" || sp.ReasonLabel != "Payout approval" ||
			fieldsText(sp.Fields) != `Paid=120(money:EUR) Expected=120(money:EUR) Reference="ref-1"(text) Customer="ada@example.com"(email)` {
			t.Errorf("the payout approval: %q %q %s", sp.Title, sp.ReasonLabel, fieldsText(sp.Fields))
		}
	})
	t.Run("metrics", func(t *testing.T) {
		r := c.call(t, http.StatusOK, "GET", "/metrics", nil)
		for _, want := range []string{`tollgate_runs{scope="database",status="succeeded"}`, "tollgate_resume_latency_seconds_count"} {
			if !bytes.Contains(r.Body, []byte(want)) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		c.call(t, http.StatusOK, "GET", "/readyz", nil)
	})
}

// TestResumeByStepKeyWhilePausing resumes runs by step key right after
// starting them, so that many resumes race the commit of their pause. Every
// resume must be accepted (200, or 202 when it came first) and every run
// must finish. (The pause takes a note, not documents: no document can be
// uploaded to a pause before it exists.)
func TestResumeByStepKeyWhilePausing(t *testing.T) {
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		c := startServer(t, env).client()
		c.call(t, http.StatusCreated, "PUT", "/api/v1/workflows/note/versions/1", json.RawMessage(
			`{"id": "note", "version": "1", "steps": [{"type": "input", "name": "verifyClaim", "reason": "awaiting_note"}]}`))
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				input := map[string]any{"claimId": fmt.Sprint(i)}
				r, err := c.do(t.Context(), "POST", "/api/v1/workflows/note/runs", map[string]any{"input": input})
				if err != nil || r.Status != http.StatusCreated {
					t.Errorf("start: %v %d %s", err, r.Status, r.Body)
					return
				}
				var run apiRun
				_ = json.Unmarshal(r.Body, &run)
				r, err = c.do(t.Context(), "POST", "/api/v1/runs/"+run.ID+"/steps/verifyClaim/resume", map[string]any{"resumeData": map[string]any{"note": "seen"}})
				if err != nil || r.Status != http.StatusOK && r.Status != http.StatusAccepted {
					t.Errorf("resume run %s by step key: %v %d %s", run.ID, err, r.Status, r.Body)
					return
				}
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				if _, err := awaitStatus(ctx, c.getRun, run.ID, "succeeded", 10*time.Millisecond); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	})
}
