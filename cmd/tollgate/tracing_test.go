package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, serve exports traces over
// OTLP/HTTP: spans of the HTTP requests, of the steps its workers ran and
// of the transitions committed, carrying the run's id, flushed at
// shutdown at the latest.
func TestServeExportsTraces(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" {
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	s := startServer(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL})
	c := s.client()
	run := c.startRun(t, "claim-verification", map[string]any{"claimId": "c-1", "claimText": "We have 12 customers", "founderEmail": "ada@example.com"})
	c.waitStatus(t, run.ID, "suspended")
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	all := bytes.Join(bodies, nil)
	mu.Unlock()
	for _, want := range []string{run.ID, "run_id", "step verifyClaim", "transition start", "POST /api/v1/workflows/{workflowId}/runs", "tollgate"} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("the exported traces (%d requests) lack %q", len(bodies), want)
		}
	}
}

// otlpCollector is an OTLP/HTTP trace receiver: it keeps every span
// exported to it, decoded.
type otlpCollector struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
	raw  [][]byte
}

func startCollector(t *testing.T) *otlpCollector {
	t.Helper()
	c := &otlpCollector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil && r.URL.Path == "/v1/traces" {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil || r.URL.Path != "/v1/traces" {
			t.Errorf("the collector got %s %s it cannot read (%v)", r.Method, r.URL.Path, err)
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.reqs, c.raw = append(c.reqs, &req), append(c.raw, b)
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.Close)
	return c
}

// exportedSpan is a span as the collector got it, with every text it
// carries: its name, status, and the keys and values of its resource's,
// scope's, own, events' and links' attributes.
type exportedSpan struct {
	name  string
	attrs map[string]string
	texts []string
	// trace is the span's trace id in hex, links the trace ids of the
	// spans it links to, failed whether its status is an error.
	trace  string
	links  []string
	failed bool
}

func (c *otlpCollector) spans() []exportedSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []exportedSpan
	for _, req := range c.reqs {
		for _, rs := range req.ResourceSpans {
			res := attrTexts(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				scope := append([]string{ss.GetScope().GetName(), ss.GetScope().GetVersion()}, attrTexts(ss.GetScope().GetAttributes())...)
				for _, sp := range ss.Spans {
					e := exportedSpan{name: sp.Name, attrs: map[string]string{}, trace: hex.EncodeToString(sp.TraceId),
						failed: sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR}
					e.texts = append(append(e.texts, res...), scope...)
					e.texts = append(e.texts, sp.Name, sp.TraceState, sp.GetStatus().GetMessage())
					e.texts = append(e.texts, attrTexts(sp.Attributes)...)
					for _, a := range sp.Attributes {
						e.attrs[a.Key] = a.Value.GetStringValue()
					}
					for _, ev := range sp.Events {
						e.texts = append(append(e.texts, ev.Name), attrTexts(ev.Attributes)...)
					}
					for _, l := range sp.Links {
						e.texts = append(append(e.texts, l.TraceState), attrTexts(l.Attributes)...)
						e.links = append(e.links, hex.EncodeToString(l.TraceId))
					}
					out = append(out, e)
				}
			}
		}
	}
	return out
}

// A run's spans are one trace, whatever worker ran them, whose id is the
// run's; the request that started the run links to it. A refusal (409) is
// an answer, not an error span. The service is named by OTEL_SERVICE_NAME,
// and no span is nameless.
func TestTracesFollowARun(t *testing.T) {
	t.Parallel()
	collector := startCollector(t)
	s := startServer(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_SERVICE_NAME": "claims-tollgate"})
	c := s.client()
	c.register(t, `{"id": "traced", "version": "1", "steps": [{"type": "task", "name": "first", "handler": "sleepFor", "config": {"ms": 1}}, {"type": "input", "name": "note", "reason": "awaiting_note"}]}`)
	run := c.startRun(t, "traced", map[string]string{"claim": "c-1"})
	c.waitStatus(t, run.ID, "suspended")
	sp := c.suspensions(t, "status=pending&kind=input&runId="+run.ID)[0]
	c.call(t, http.StatusOK, "POST", "/api/v1/suspensions/"+sp.ID+"/resume", map[string]any{"resumeData": map[string]string{"note": "ok"}})
	c.call(t, http.StatusConflict, "POST", "/api/v1/suspensions/"+sp.ID+"/resume", map[string]any{"resumeData": map[string]string{"note": "again"}})
	c.waitStatus(t, run.ID, "succeeded")
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}

	runTrace := strings.ReplaceAll(run.ID, "-", "")
	var start, refused, steps int
	var requestTrace string
	for _, sp := range collector.spans() {
		if strings.TrimSpace(sp.name) == "" {
			t.Errorf("a span without a name: %+v", sp)
		}
		if !slices.Contains(sp.texts, "claims-tollgate") {
			t.Errorf("span %q does not name the service OTEL_SERVICE_NAME names", sp.name)
		}
		if sp.name == "POST /api/v1/workflows/{workflowId}/runs" {
			requestTrace = sp.trace
		}
		if sp.attrs["tollgate.refused"] != "" && sp.name == "transition resume" {
			refused++ // a resume names its suspension, not its run
		}
		if sp.failed {
			t.Errorf("span %q failed: %+v", sp.name, sp.attrs)
		}
		if sp.attrs["run_id"] != run.ID {
			continue
		}
		if sp.trace != runTrace {
			t.Errorf("span %q of the run is in trace %s, not the run's %s", sp.name, sp.trace, runTrace)
		}
		switch {
		case sp.name == "transition start":
			start++
			if len(sp.links) != 1 || sp.links[0] != requestTrace || requestTrace == "" {
				t.Errorf("the run's start links to %v, not to the request's trace %s", sp.links, requestTrace)
			}
		case strings.HasPrefix(sp.name, "step "):
			steps++
		}
	}
	if start != 1 || steps < 2 || refused != 1 {
		t.Errorf("the run's trace has %d starts, %d steps, %d refusals; want 1, 2 or more, 1", start, steps, refused)
	}
}

// attrTexts lists the keys and values of attrs, nested ones included.
func attrTexts(attrs []*commonpb.KeyValue) []string {
	var out []string
	for _, a := range attrs {
		out = append(append(out, a.Key), valueTexts(a.Value)...)
	}
	return out
}

func valueTexts(v *commonpb.AnyValue) []string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return []string{x.StringValue}
	case *commonpb.AnyValue_BytesValue:
		return []string{string(x.BytesValue)}
	case *commonpb.AnyValue_ArrayValue:
		var out []string
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, valueTexts(e)...)
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return attrTexts(x.KvlistValue.GetValues())
	case nil:
		return nil
	default:
		return []string{fmt.Sprint(x)}
	}
}

// Capability tokens, API keys, cookies and passwords never reach what an
// operator collects: the spans exported, the log and the metrics. Spans
// of HTTP requests are named by route and carry the route's pattern as
// url.path and http.route, never the path asked for, which holds tokens
// (decision links, password-reset links, receipts) or a query with one
// (resume URLs).
func TestTracesCarryNoCapabilityTokens(t *testing.T) {
	t.Parallel()
	const public = "https://tollgate.example.com"
	const metricsToken = "metrics-token-0123456789abcdef"
	collector := startCollector(t)
	smtp := startSMTPServer(t)
	s := startServer(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "TOLLGATE_ADMIN_EMAIL": "boss@example.com",
		"TOLLGATE_SMTP_URL": smtp.URL, "TOLLGATE_SMTP_FROM": "Tollgate <tollgate@example.com>", "TOLLGATE_METRICS_TOKEN": metricsToken},
		"--public-url", public, "--http-allow", "127.0.0.1", "--log-level", "debug")
	c := s.client()
	local := func(u string) string { return s.URL + strings.TrimPrefix(u, public) }
	browser := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, u string, form url.Values, want int) *http.Response {
		t.Helper()
		var resp *http.Response
		var err error
		if form == nil {
			resp, err = browser.Get(u)
		} else {
			resp, err = browser.PostForm(u, form)
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d\n%s", method, u, resp.StatusCode, want, b)
		}
		return resp
	}
	secrets := map[string]string{"API key": testKey, "metrics token": metricsToken}

	// A password reset, asked for by mail, and the new password chosen.
	send("POST", s.URL+"/forgot", url.Values{"email": {"boss@example.com"}}, http.StatusOK)
	link := regexp.MustCompile(regexp.QuoteMeta(public) + `/reset/([A-Za-z0-9]+)`).FindStringSubmatch(smtp.Wait(t, 1, 30*time.Second)[0].Text)
	if link == nil {
		t.Fatal("no reset link in the mail")
	}
	const password = "lantern quietly orbits marmalade 7"
	secrets["reset token"], secrets["password"] = link[1], password
	send("GET", local(link[0]), nil, http.StatusOK)
	done := send("POST", local(link[0]), url.Values{"new": {password}, "confirm": {password}}, http.StatusOK)
	for _, ck := range done.Cookies() {
		secrets["cookie "+ck.Name] = ck.Value
	}
	if len(done.Cookies()) == 0 {
		t.Fatal("a password reset signs in with no cookie")
	}

	// A decision link, opened and used.
	c.register(t, `{"id": "vendor-terms", "version": "1", "steps": [{"type": "approval", "name": "terms", "title": "Accept the revised terms"}]}`)
	run := c.startRun(t, "vendor-terms", map[string]any{})
	c.waitStatus(t, run.ID, "suspended")
	var made struct{ URL string }
	c.call(t, http.StatusCreated, "POST", "/api/v1/suspensions/"+c.suspensions(t, "runId="+run.ID)[0].ID+"/links", map[string]string{"email": "partner@vendor.example"}).decode(t, &made)
	secrets["link token"] = made.URL[strings.LastIndex(made.URL, "/")+1:]
	send("GET", local(made.URL), nil, http.StatusOK)
	send("POST", local(made.URL), url.Values{"decision": {"approve"}}, http.StatusSeeOther)
	c.waitStatus(t, run.ID, "succeeded")

	// An async http step, completed through its webhook with its receipt.
	hooks := make(chan endpointCall, 1)
	e := newEndpoint(t, func(_ int, call endpointCall) (int, string) { hooks <- call; return http.StatusOK, "" })
	c.register(t, `{"id": "ship", "version": "1", "steps": [{"type": "http", "name": "work", "async": true, "url": "`+e.URL+`"}]}`)
	run = c.startRun(t, "ship", nil)
	call := <-hooks
	secrets["receipt token"] = call.Metadata["receiptToken"].(string)
	c.waitStatus(t, run.ID, "suspended")
	resp, err := http.Post(local(call.Metadata["webhookUrl"].(string)), "application/json", strings.NewReader(`{"success": true, "outputs": {"box": 1}}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the receipt's report: %v %v", resp, err)
	}
	resp.Body.Close()
	c.waitStatus(t, run.ID, "succeeded")

	// A waitpoint's resume URL, whose token is in the query.
	c.register(t, signupDoc)
	resp, err = http.Post(s.URL+"/v1/webhooks/signup", "application/json", strings.NewReader(`{"email": "ada@example.com"}`))
	if err != nil {
		t.Fatal(err)
	}
	var first struct{ Confirm string }
	if err := json.NewDecoder(resp.Body).Decode(&first); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the trigger's answer: %d (%v)", resp.StatusCode, err)
	}
	resp.Body.Close()
	resume, err := url.Parse(local(first.Confirm))
	if err != nil || resume.Query().Get("token") == "" {
		t.Fatalf("resume URL %q (%v)", first.Confirm, err)
	}
	secrets["resume token"] = resume.Query().Get("token")
	resp, err = http.Post(resume.String(), "text/plain", strings.NewReader("confirmed"))
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("the resume: %v %v", resp, err)
	}
	resp.Body.Close()

	metrics := string(c.call(t, http.StatusOK, "GET", "/metrics", nil, "Authorization", "Bearer "+metricsToken).Body)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}

	spans := collector.spans()
	names := map[string]exportedSpan{}
	for _, sp := range spans {
		names[sp.name] = sp
		for _, text := range sp.texts {
			for what, secret := range secrets {
				if strings.Contains(text, secret) {
					t.Errorf("span %q carries the %s: %q", sp.name, what, text)
				}
			}
		}
	}
	collector.mu.Lock()
	raw := bytes.Join(collector.raw, nil)
	collector.mu.Unlock()
	for what, secret := range secrets {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the exported traces carry the %s", what)
		}
		if strings.Contains(metrics, secret) {
			t.Errorf("/metrics carries the %s", what)
		}
		if strings.Contains(s.Stderr.String(), secret) || strings.Contains(s.Stdout.String(), secret) {
			t.Errorf("the log carries the %s", what)
		}
	}
	for _, route := range []string{"POST /forgot", "GET /reset/{token}", "POST /reset/{token}", "POST /api/v1/suspensions/{id}/links",
		"GET /links/{token}", "POST /links/{token}", "POST /webhook/{flowId}/{stepId}/{token}",
		"POST /v1/webhooks/{workflowId}", "POST /v1/flow-runs/{runId}/waitpoints/{waitpointId}", "GET /metrics"} {
		sp, ok := names[route]
		_, path, _ := strings.Cut(route, " ")
		switch {
		case !ok:
			t.Errorf("no span named %q among %d", route, len(spans))
		case sp.attrs["http.route"] != path || sp.attrs["url.path"] != path:
			t.Errorf("span %q has http.route %q and url.path %q, want %q", route, sp.attrs["http.route"], sp.attrs["url.path"], path)
		}
	}
	if !strings.Contains(metrics, `route="GET /links/{token}"`) {
		t.Errorf("/metrics counts no request by its route:\n%s", metrics)
	}
}

// The tracing handler shows otelhttp no path or query, whatever the
// handler it wraps does with its span: that handler still gets the whole
// request, body included.
func TestTracingHandlerHidesThePath(t *testing.T) {
	t.Parallel()
	collector := startCollector(t)
	tr, err := newTracing(t.Context(), envFunc(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}), "test")
	if err != nil {
		t.Fatal(err)
	}
	var got, body string
	srv := httptest.NewServer(tr.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, body = r.URL.RequestURI(), string(b)
	})))
	const uri = "/reset/path-secret-0123?token=query-secret-4567"
	resp, err := http.Post(srv.URL+uri, "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	srv.Close()
	if err := tr.shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got != uri || body != "hello" {
		t.Errorf("the handler got %q with body %q, want %q with hello", got, body, uri)
	}
	spans := collector.spans()
	if len(spans) != 1 || spans[0].name != "POST" {
		t.Fatalf("spans %+v, want one named POST", spans)
	}
	for _, text := range spans[0].texts {
		if strings.Contains(text, "secret") {
			t.Errorf("the span carries %q", text)
		}
	}
}
