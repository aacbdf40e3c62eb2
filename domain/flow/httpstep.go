package flow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// HTTP steps call an endpoint with the step's arguments and metadata. A
// sync step's answer is its StepResult ({success, outputs | error}); an
// async step's first answer only acknowledges, and the endpoint reports
// later to metadata.webhookUrl, {PUBLIC_URL}/webhook/{flowId}/{stepId}/
// {receiptToken}. Metadata is written in camelCase like the rest of the
// API, and also under the async-step protocol's own names (flow_id,
// step_id, run_id, receipt_token, webhook_url), so that an endpoint
// written to the protocol works unchanged. Calls time out, and are retried with the step's backoff
// on 5xx, 429 and network errors; each carries the receipt token as its
// Idempotency-Key and its number, from 1, as metadata.attempt. Redirects
// are not followed.

// HTTPSteps is what http steps need from the server.
type HTTPSteps struct {
	Allow     *AllowList
	WorkItems domain.WorkItemStore
	// Links derive receipt tokens and webhook URLs.
	Links *Links
	// Client makes the calls; NewHTTPSteps builds one that dials only
	// what Allow allows.
	Client *http.Client
	// Secrets looks up a secret a document's header names by
	// {"$secret": "NAME"}, at each call (the server's environment); nil
	// finds none.
	Secrets func(name string) (string, bool)
}

// NewHTTPSteps returns http step support whose calls go only where allow
// lets them.
func NewHTTPSteps(allow *AllowList, items domain.WorkItemStore, links *Links) *HTTPSteps {
	return &HTTPSteps{Allow: allow, WorkItems: items, Links: links, Client: &http.Client{
		Transport:     allow.Transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Transport dials only what a allows: in the default policy the address
// actually dialled must be public, so a name that resolves to an internal
// address is refused at each connection, whatever it resolved to before.
// It uses no proxy, which would dial on the caller's behalf.
func (a *AllowList) Transport() *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: a.control}
	return &http.Transport{
		Proxy: nil, DialContext: dialer.DialContext, MaxIdleConnsPerHost: 16,
		IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
	}
}

// AllowList says which hosts http steps may call. Without patterns, any
// host whose addresses are all public (not loopback, private, link-local,
// shared or unspecified) — the internet, not the server's own network.
// With patterns, exactly the hosts they match, wherever those are:
// "api.example.com", "api.example.com:8443", "*.example.com", "10.0.0.7",
// or "*" for any host.
type AllowList struct{ patterns []string }

// ParseAllowList reads a comma-separated list of patterns.
func ParseAllowList(s string) (*AllowList, error) {
	a := &AllowList{}
	for p := range strings.SplitSeq(s, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "" {
			continue
		}
		if strings.ContainsAny(p, "/ @?#") || strings.Count(strings.TrimPrefix(p, "*."), "*") > 0 && p != "*" {
			return nil, fmt.Errorf("http allow-list: %q is not a host, host:port or *.domain pattern", p)
		}
		a.patterns = append(a.patterns, p)
	}
	return a, nil
}

// String describes the list.
func (a *AllowList) String() string {
	if a == nil || len(a.patterns) == 0 {
		return "public addresses only"
	}
	return strings.Join(a.patterns, ",")
}

// Allows reports whether a URL's host may be called. Without patterns the
// host's addresses are checked when it is dialled.
func (a *AllowList) Allows(u *url.URL) bool {
	if a == nil || len(a.patterns) == 0 {
		if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
			return public(ip)
		}
		return !strings.EqualFold(u.Hostname(), "localhost")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, p := range a.patterns {
		ph, pp, hasPort := strings.Cut(p, ":")
		if strings.HasPrefix(p, "[") { // [::1]:8080
			if i := strings.LastIndex(p, "]"); i > 0 {
				ph, pp, hasPort = p[1:i], strings.TrimPrefix(p[i+1:], ":"), strings.HasPrefix(p[i+1:], ":")
			}
		}
		if hasPort && pp != port {
			continue
		}
		switch {
		case ph == "*", ph == host, strings.HasPrefix(ph, "*.") && strings.HasSuffix(host, ph[1:]):
			return true
		}
	}
	return false
}

// control refuses, in the default policy, connections to addresses that
// are not public: checked on the address actually dialled, so a name that
// resolves to an internal address is refused too. The refusal is
// permanent: calling again would dial the same address.
func (a *AllowList) control(_, address string, _ syscall.RawConn) error {
	if a != nil && len(a.patterns) > 0 {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	if !public(ap.Addr()) {
		return &permanent{fmt.Sprintf("%s is not a public address; list the host in --http-allow to call it", ap.Addr())}
	}
	return nil
}

var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

func public(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !sharedSpace.Contains(ip) && !ip.IsLoopback() && !ip.IsLinkLocalUnicast()
}

// receipt is a work item's receipt token: derived from the server's
// secret, so a retried call carries the same one.
func (h *HTTPSteps) receipt(runID, key string) string { return h.Links.mac("receipt", runID, key) }

func (h *HTTPSteps) webhookURL(workflowID, step, token string) string {
	return h.Links.url("/webhook/" + url.PathEscape(workflowID) + "/" + url.PathEscape(step) + "/" + token)
}

// headers are the values of st's headers for one call, secrets read now.
// A secret that is not set, or holds what a header cannot carry, fails
// the call for good: calling again would not change it. The error names
// the secret, never a value.
func (h *HTTPSteps) headers(st Step) (map[string]string, error) {
	out := make(map[string]string, len(st.Headers))
	for name, v := range st.Headers {
		if v.Secret == "" {
			out[name] = v.Value
			continue
		}
		var val string
		ok := false
		if h.Secrets != nil {
			val, ok = h.Secrets(v.Secret)
		}
		switch {
		case !ok:
			return nil, &permanent{fmt.Sprintf("step %s: header %s: secret %s is not set in the server's environment", st.Name, name, v.Secret)}
		case !validHeaderValue(val):
			return nil, &permanent{fmt.Sprintf("step %s: header %s: secret %s holds a control character, which a header value cannot carry", st.Name, name, v.Secret)}
		}
		out[name] = val
	}
	return out, nil
}

// permanent is a call whose failure a retry would not change.
type permanent struct{ msg string }

func (p *permanent) Error() string { return p.msg }

// protocolNames are the async-step protocol's names for metadata members.
var protocolNames = map[string]string{"flowId": "flow_id", "stepId": "step_id", "runId": "run_id", "receiptToken": "receipt_token", "webhookUrl": "webhook_url"}

// stepBody is what an http step's endpoint receives.
type stepBody struct {
	Args     json.RawMessage            `json:"args"`
	Input    json.RawMessage            `json:"input"`
	Steps    map[string]json.RawMessage `json:"steps"`
	Metadata map[string]any             `json:"metadata"`
}

// maxStepResult bounds an endpoint's answer.
const maxStepResult = 1 << 20

// call makes one call of st's endpoint. A 2xx answer is decoded as a
// StepResult (an empty one acknowledges, for async steps); 5xx, 429 and
// network errors are returned as errors to retry; anything else is a
// permanent failure.
func (h *HTTPSteps) call(ctx context.Context, st Step, body stepBody, token string) (domain.StepOutcome, error) {
	u, err := url.Parse(st.URL)
	if err != nil {
		return domain.StepOutcome{}, &permanent{fmt.Sprintf("step %s: url: %v", st.Name, err)}
	}
	if !h.Allow.Allows(u) {
		return domain.StepOutcome{}, &permanent{fmt.Sprintf("step %s: %s is not on this server's http allow-list (%s)", st.Name, u.Host, h.Allow)}
	}
	headers, err := h.headers(st)
	if err != nil {
		return domain.StepOutcome{}, err
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return domain.StepOutcome{}, err
	}
	timeout := 30 * time.Second
	if st.TimeoutMs > 0 {
		timeout = time.Duration(st.TimeoutMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	method := st.Method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, st.URL, bytes.NewReader(payload))
	if err != nil {
		return domain.StepOutcome{}, &permanent{fmt.Sprintf("step %s: %v", st.Name, err)}
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", token)
	resp, err := h.Client.Do(req)
	if err != nil {
		if pe, ok := errors.AsType[*permanent](err); ok { // the dialler refused the address
			return domain.StepOutcome{}, &permanent{fmt.Sprintf("step %s: call %s: %s", st.Name, u.Host, pe.msg)}
		}
		return domain.StepOutcome{}, fmt.Errorf("step %s: call %s: %w", st.Name, u.Host, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxStepResult+1))
	if err != nil {
		return domain.StepOutcome{}, fmt.Errorf("step %s: read the answer of %s: %w", st.Name, u.Host, err)
	}
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return domain.StepOutcome{}, fmt.Errorf("step %s: %s answered %d: %s", st.Name, u.Host, resp.StatusCode, snippet(answer))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return domain.StepOutcome{}, &permanent{fmt.Sprintf("step %s: %s answered %d: %s", st.Name, u.Host, resp.StatusCode, snippet(answer))}
	case len(answer) > maxStepResult:
		return domain.StepOutcome{}, &permanent{fmt.Sprintf("step %s: %s answered with more than %d bytes", st.Name, u.Host, maxStepResult)}
	case st.Async && len(bytes.TrimSpace(answer)) == 0:
		return domain.StepOutcome{Success: true}, nil
	}
	o, err := DecodeOutcome(answer)
	if err != nil {
		return domain.StepOutcome{}, &permanent{fmt.Sprintf("step %s: %s answered %d with %v", st.Name, u.Host, resp.StatusCode, err)}
	}
	return o, nil
}

// Report is a StepResult as it comes, an endpoint's answer or an async
// step's report: {"success": true, "outputs": …}, {"success": false,
// "error": "…"}, or {"success": false, "notCompleted": true} for work that
// should be tried again.
type Report struct {
	Success      *bool           `json:"success"`
	Outputs      json.RawMessage `json:"outputs"`
	Error        string          `json:"error"`
	NotCompleted bool            `json:"notCompleted"`
}

// DecodeOutcome reads a StepResult (see Report). It refuses text the
// databases do not store alike (a NUL, an unpaired surrogate; see
// domain.CheckJSON), since the outcome is stored as it came.
func DecodeOutcome(b []byte) (domain.StepOutcome, error) {
	var raw Report
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&raw); err != nil {
		return domain.StepOutcome{}, fmt.Errorf("a body that is not a StepResult {success, outputs | error}: %s", jsonMessage(err))
	}
	if ve, ok := errors.AsType[*domain.ValidationError](domain.CheckJSON(b)); ok {
		return domain.StepOutcome{}, errors.New("a StepResult whose " + ve.Message)
	}
	return raw.Outcome()
}

// Outcome is the step outcome a report states, or why it states none.
func (r Report) Outcome() (domain.StepOutcome, error) {
	if r.Success == nil {
		return domain.StepOutcome{}, errors.New("a StepResult without success (true or false)")
	}
	if *r.Success && r.NotCompleted {
		return domain.StepOutcome{}, errors.New("a StepResult both successful and not completed")
	}
	o := domain.StepOutcome{Success: *r.Success, Outputs: r.Outputs, Error: r.Error, NotCompleted: r.NotCompleted}
	if domain.IsNull(o.Outputs) {
		o.Outputs = json.RawMessage("{}")
	}
	if !o.Success && !o.NotCompleted && o.Error == "" {
		o.Error = "the endpoint reported a failure without saying why"
	}
	return o, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "(no body)"
	}
	return s
}

// httpStep runs an http step: a sync one in one execution, an async one
// through its work item (see async).
func (c *compiled) httpStep(ctx context.Context, i int, req domain.StepRequest, s State, resumed bool) (domain.StepResult, error) {
	st := c.doc.Steps[i]
	h := c.env.HTTP
	if h == nil {
		return domain.StepResult{}, errors.New("this server does not run http steps")
	}
	if !st.Async {
		token := h.receipt(req.RunID, req.IdempotencyKey)
		o, err := h.call(ctx, st, c.body(st, req, s, req.Attempt, token, ""), token)
		return c.settle(i, s, o, err)
	}
	return c.async(ctx, i, req, s, resumed)
}

func (c *compiled) body(st Step, req domain.StepRequest, s State, attempt int, token, webhook string) stepBody {
	meta := map[string]any{"flowId": c.doc.ID, "stepId": st.Name, "runId": req.RunID, "attempt": attempt, "receiptToken": token}
	if webhook != "" {
		meta["webhookUrl"] = webhook
	}
	for camel, snake := range protocolNames {
		if v, ok := meta[camel]; ok {
			meta[snake] = v
		}
	}
	args := st.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return stepBody{Args: args, Input: s.Input, Steps: s.Steps, Metadata: meta}
}

// settle turns a call's result into the step's: outputs and on; a
// reported or permanent failure fails the run; anything else is returned
// to be retried with the step's backoff.
func (c *compiled) settle(i int, s State, o domain.StepOutcome, err error) (domain.StepResult, error) {
	var pe *permanent
	switch {
	case errors.As(err, &pe):
		return fail(domain.CodeStepFailed, pe.msg), nil
	case err != nil:
		return domain.StepResult{}, err
	case o.Success:
		s.WorkItem, s.Phase = "", ""
		return c.advance(i, s, o.Outputs), nil
	default:
		msg := o.Error
		if o.NotCompleted {
			msg = "the endpoint reported the work not completed"
		}
		return fail(domain.CodeStepFailed, fmt.Sprintf("step %s failed: %s", c.doc.Steps[i].Name, msg)), nil
	}
}

// Phases of an async step's pause.
const (
	phaseCallback = "callback" // waiting for the endpoint's report, until the completion timeout
	phaseBackoff  = "backoff"  // waiting to call the endpoint again
)

// async moves an async step's work item along. Its state is the truth: a
// pause may be resumed by the endpoint's report or by its own timer, and
// the step reads what the item says.
func (c *compiled) async(ctx context.Context, i int, req domain.StepRequest, s State, resumed bool) (domain.StepResult, error) {
	st, h := c.doc.Steps[i], c.env.HTTP
	var item domain.WorkItem
	var err error
	if s.WorkItem == "" {
		id := newID()
		item, err = h.WorkItems.StartWorkItem(ctx, domain.WorkItem{ID: id, RunID: req.RunID, WorkflowID: c.doc.ID, StepName: st.Name,
			ExecutionKey: req.IdempotencyKey, TokenHash: tokenHash(h.receipt(req.RunID, id)), WaitKey: id + ".1", CreatedAt: c.env.now()})
		s.WorkItem, s.Phase = item.ID, ""
	} else {
		item, err = h.WorkItems.WorkItem(ctx, s.WorkItem)
	}
	if err != nil {
		return domain.StepResult{}, err
	}
	attempts := retryPolicy(st).MaxAttempts
	for {
		var moved bool
		switch {
		case item.State.Final():
			return c.settle(i, s, *item.Result, nil)
		case item.State == domain.WorkActive && resumed && s.Phase == phaseCallback:
			// The completion timeout passed without a report.
			if st.OnTimeout == "retry" && item.Dispatch < attempts {
				if item, moved, err = h.WorkItems.MoveWorkItem(ctx, item.ID, []domain.WorkState{domain.WorkActive}, domain.WorkNotCompleted, item.Dispatch, backoffKey(item), nil, c.env.now()); err == nil && moved {
					return c.backoff(st, s, item), nil
				}
			} else {
				o := &domain.StepOutcome{Error: fmt.Sprintf("no report within the completion timeout (%v) after %d call(s)", c.completionTimeout(st), item.Dispatch)}
				item, _, err = h.WorkItems.MoveWorkItem(ctx, item.ID, []domain.WorkState{domain.WorkActive}, domain.WorkFailed, item.Dispatch, item.WaitKey, o, c.env.now())
			}
		case item.State == domain.WorkNotCompleted && !(resumed && s.Phase == phaseBackoff):
			// Reported not completed: wait, then call again while attempts remain.
			if item.Dispatch < attempts {
				if item.WaitKey == backoffKey(item) {
					return c.backoff(st, s, item), nil // a retried execution of this step
				}
				if item, moved, err = h.WorkItems.MoveWorkItem(ctx, item.ID, []domain.WorkState{domain.WorkNotCompleted}, domain.WorkNotCompleted, item.Dispatch, backoffKey(item), nil, c.env.now()); err == nil && moved {
					return c.backoff(st, s, item), nil
				}
			} else {
				o := &domain.StepOutcome{Error: fmt.Sprintf("the work was not completed after %d call(s)", item.Dispatch)}
				item, _, err = h.WorkItems.MoveWorkItem(ctx, item.ID, []domain.WorkState{domain.WorkNotCompleted}, domain.WorkFailed, item.Dispatch, item.WaitKey, o, c.env.now())
			}
		case item.State == domain.WorkNotCompleted:
			// The backoff is over: call again.
			n := item.Dispatch + 1
			if item, moved, err = h.WorkItems.MoveWorkItem(ctx, item.ID, []domain.WorkState{domain.WorkNotCompleted}, domain.WorkActive, n, fmt.Sprintf("%s.%d", item.ID, n), nil, c.env.now()); err == nil && moved {
				return c.dispatch(ctx, i, req, s, item)
			}
		default: // active: call (again, after a retryable failure of the last call)
			return c.dispatch(ctx, i, req, s, item)
		}
		if err != nil {
			return domain.StepResult{}, err
		}
	}
}

func backoffKey(item domain.WorkItem) string {
	return fmt.Sprintf("%s.%d.backoff", item.ID, item.Dispatch)
}

// dispatch calls the endpoint for an active item and pauses until its
// report or its completion timeout.
func (c *compiled) dispatch(ctx context.Context, i int, req domain.StepRequest, s State, item domain.WorkItem) (domain.StepResult, error) {
	st, h := c.doc.Steps[i], c.env.HTTP
	token := h.receipt(req.RunID, item.ID)
	s.Calls = callNumber(s, item, req.Attempt)
	o, err := h.call(ctx, st, c.body(st, req, s, s.Calls, token, h.webhookURL(c.doc.ID, st.Name, token)), token)
	var pe *permanent
	switch {
	case errors.As(err, &pe):
		o = domain.StepOutcome{Error: pe.msg}
	case err != nil:
		return domain.StepResult{}, err // the same item is called again on retry
	}
	if !o.Success && !o.NotCompleted {
		if _, _, err := h.WorkItems.MoveWorkItem(ctx, item.ID, []domain.WorkState{domain.WorkActive}, domain.WorkFailed, item.Dispatch, item.WaitKey, &o, c.env.now()); err != nil {
			return domain.StepResult{}, err
		}
		return c.settle(i, s, o, nil)
	}
	s.Phase = phaseCallback
	return domain.StepResult{Commands: []domain.Command{{
		Type: domain.CmdSuspend, Kind: domain.KindCallback, Reason: "callback", Checkpoint: s, ResumeStep: st.Name,
		StepKey: item.WaitKey, Until: c.env.now().Add(c.completionTimeout(st)),
	}}}, nil
}

// callNumber numbers a call of an async step's endpoint from 1 across
// its dispatches: the calls made before this dispatch's pause, then this
// execution's attempt, since each execution of the job that dispatches
// calls once (a 5xx, a 429 or a network error is retried as another
// execution of the same job, with the same dispatch). A checkpoint written
// without Calls has at least one call for each dispatch before this one.
func callNumber(s State, item domain.WorkItem, attempt int) int {
	return max(s.Calls, item.Dispatch-1) + attempt
}

// backoff pauses before the next call; a report that comes meanwhile
// ends the wait.
func (c *compiled) backoff(st Step, s State, item domain.WorkItem) domain.StepResult {
	p := retryPolicy(st)
	s.Phase = phaseBackoff
	return domain.StepResult{Commands: []domain.Command{{
		Type: domain.CmdSuspend, Kind: domain.KindDelay, Reason: "retry", Checkpoint: s, ResumeStep: st.Name,
		StepKey: item.WaitKey, Until: c.env.now().Add(p.Backoff(item.Dispatch, domain.Jitter())),
	}}}
}

// DefaultCompletionTimeout is how long an async step waits for its report
// when its document does not say.
const DefaultCompletionTimeout = time.Hour

func (c *compiled) completionTimeout(st Step) time.Duration {
	if st.CompletionTimeoutMs > 0 {
		return time.Duration(st.CompletionTimeoutMs) * time.Millisecond
	}
	return DefaultCompletionTimeout
}
