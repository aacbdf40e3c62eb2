package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/web"
)

// Webhook endpoints. They take any HTTP method and are authorised by what
// is in their URL, not by an API key: a waitpoint's resume URL by its
// token, a webhook trigger by the workflow having opted in to it. A wrong
// token, an unknown waitpoint and a workflow without a webhook trigger all
// answer 404 alike.

// droppedCallHeaders are credentials a caller may send that a workflow has
// no use for and the database should not keep.
var droppedCallHeaders = []string{"authorization", "cookie", "proxy-authorization", "x-api-key"}

// keepsCallHeader reports whether a call's header, named in lower case, is
// kept in what the workflow receives: not a credential, nor one the server
// was told to redact.
func (s *api) keepsCallHeader(name string) bool {
	return !slices.Contains(droppedCallHeaders, name) && !slices.ContainsFunc(s.RedactHeaders, func(r string) bool { return strings.EqualFold(r, name) })
}

// readCall turns an HTTP request into what a workflow receives. The body
// may be of any content type, up to the server's limit.
func (s *api) readCall(w http.ResponseWriter, r *http.Request, dropQuery ...string) (json.RawMessage, error) {
	body, err := web.ReadBody(w, r, s.MaxBody)
	if err != nil {
		return nil, err
	}
	call := domain.HTTPCall{Method: r.Method, Headers: map[string]string{}, QueryParams: map[string]string{}, Body: json.RawMessage("null")}
	for k, v := range r.Header {
		if k = strings.ToLower(k); s.keepsCallHeader(k) {
			call.Headers[k] = strings.Join(v, ", ")
		}
	}
	for k, v := range r.URL.Query() {
		call.QueryParams[k] = strings.Join(v, ",")
	}
	for _, k := range dropQuery {
		delete(call.QueryParams, k)
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case len(body) == 0:
	case (mt == "application/json" || strings.HasSuffix(mt, "+json")) && json.Valid(body):
		call.Body = body
	case utf8.Valid(body):
		call.Body, _ = json.Marshal(string(body))
	default:
		call.Body, _ = json.Marshal(base64.StdEncoding.EncodeToString(body))
		call.BodyEncoding = "base64"
	}
	return json.Marshal(call)
}

// resumeWaitpoint completes a WEBHOOK waitpoint with the call. The async
// form answers at once; the sync form waits for what the run does next. A
// call that comes before the step's pause has committed is kept and
// applied when it does; a repeated call is absorbed (the run resumes once)
// and answered as the first was.
func (s *api) resumeWaitpoint(sync bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.Waitpoints == nil {
			return domain.ErrNotFound
		}
		runID, id := r.PathValue("runId"), r.PathValue("waitpointId")
		wp, err := s.Waitpoints.Check(r.Context(), runID, id, r.URL.Query().Get("token"))
		if err != nil {
			return err
		}
		data, err := s.readCall(w, r, "token")
		if err != nil {
			return err
		}
		audit := s.AuditEntry(r, domain.AuditEntry{ActorEmail: "webhook", Action: "suspension.resume",
			Data: web.AuditData(map[string]any{"via": "waitpoint", "waitpointId": wp.ID, "runId": runID})})
		_, err = s.Engine.Resume(r.Context(), domain.ResumeRequest{RunID: runID, StepKey: wp.ID, Data: data, By: "webhook", Audit: audit})
		var ce *domain.ConflictError
		duplicate := errors.As(err, &ce) && ce.Code == domain.CodeAlreadyResumed
		if err != nil && !duplicate {
			return err
		}
		if !sync {
			web.WriteJSON(w, http.StatusOK, map[string]any{"runId": runID, "waitpointId": wp.ID, "status": domain.WaitpointCompleted, "duplicate": duplicate})
			return nil
		}
		s.answerWithRun(w, r, runID, wp.ID)
		return nil
	}
}

// webhookTrigger starts a run of a workflow that takes webhooks, with the
// call as its input, and answers with what the run does first: its output
// if it finishes, or the response of the waitpoint it pauses on
// (respond-then-pause).
func (s *api) webhookTrigger(w http.ResponseWriter, r *http.Request) error {
	if s.Waitpoints == nil {
		return domain.ErrNotFound
	}
	wf, err := s.Engine.Registry().Find(r.Context(), r.PathValue("workflowId"), "")
	if err != nil {
		return err
	}
	if !wf.WebhookTrigger {
		return domain.ErrNotFound
	}
	data, err := s.readCall(w, r)
	if err != nil {
		return err
	}
	run, created, err := s.Engine.Start(r.Context(), wf.ID, data, r.Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	if !created {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	s.answerWithRun(w, r, run.ID, "")
	return nil
}

// answerWithRun waits for the run to finish or to pause on a waitpoint
// other than the one just completed, and answers with its output or that
// waitpoint's response. A run that pauses on something without a response
// (a person, a timer) or takes longer than SyncTimeout is answered 202
// with where to follow it.
func (s *api) answerWithRun(w http.ResponseWriter, r *http.Request, runID, completed string) {
	ctx, cancel := context.WithTimeout(r.Context(), s.syncTimeout())
	defer cancel()
	changed, stop := s.WatchRun(ctx, runID)
	defer stop()
	poll := time.NewTicker(500 * time.Millisecond) // a notification can be lost
	defer poll.Stop()
	for {
		run, resp, err := s.runAnswer(ctx, runID, completed)
		switch {
		case errors.Is(err, domain.ErrNotFound): // an admin deleted the run meanwhile
			web.WriteProblem(w, r, web.ProblemFor(err))
			return
		case err != nil && ctx.Err() == nil:
			s.Log.ErrorContext(r.Context(), "Waiting for a run failed", "run_id", runID, "error", err)
			web.WriteProblem(w, r, web.NewProblem(http.StatusInternalServerError, "internal", "The server failed to follow the run."))
			return
		case resp != nil:
			writeHTTPResponse(w, resp)
			return
		case run.Status == domain.RunSucceeded:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(domain.OrNull(run.Output))
			return
		case run.Status.Terminal():
			p := web.NewProblem(http.StatusInternalServerError, "run_"+string(run.Status), fmt.Sprintf("run %s %s", run.ID, run.Status))
			if run.Error != nil {
				p.Detail += ": " + run.Error.Message
			}
			web.WriteProblem(w, r, p)
			return
		case run.Status == domain.RunSuspended:
			s.accepted(w, run)
			return
		}
		select {
		case <-changed:
		case <-poll.C:
		case <-ctx.Done():
			if r.Context().Err() != nil {
				return // the caller has gone
			}
			if run, err = s.Store.Run(r.Context(), runID); err != nil {
				s.Log.ErrorContext(r.Context(), "Reading a run failed", "run_id", runID, "error", err)
				run = domain.Run{ID: runID}
			}
			s.accepted(w, run)
			return
		}
	}
}

// runAnswer reads the run and, when it is paused on a waitpoint with a
// response to send, that response.
func (s *api) runAnswer(ctx context.Context, runID, completed string) (domain.Run, *domain.HTTPResponse, error) {
	run, err := s.Store.Run(ctx, runID)
	if err != nil || run.Status != domain.RunSuspended {
		return run, nil, err
	}
	wps, err := s.Waitpoints.Store.Waitpoints(ctx, runID)
	if err != nil {
		return run, nil, err
	}
	for _, wp := range wps {
		if wp.ID != completed && wp.Paused && wp.Status == domain.WaitpointPending && wp.ResponseToSend != nil {
			return run, s.Waitpoints.Response(wp), nil
		}
	}
	return run, nil, nil
}

func (s *api) accepted(w http.ResponseWriter, run domain.Run) {
	u := strings.TrimRight(s.Waitpoints.PublicURL, "/") + "/api/v1/runs/" + url.PathEscape(run.ID)
	w.Header().Set("Location", u)
	web.WriteJSON(w, http.StatusAccepted, map[string]any{"runId": run.ID, "status": run.Status, "url": u})
}

func (s *api) syncTimeout() time.Duration {
	if s.SyncTimeout > 0 {
		return s.SyncTimeout
	}
	return 30 * time.Second
}

// workflowResponseCSP confines a workflow's response, which its author
// wrote and the app serves on its own origin: sandboxed without
// allow-same-origin, a page in it has an opaque origin (no cookies, no
// storage, no request as the app), runs no script, submits no form,
// opens no window and loads nothing.
const workflowResponseCSP = "sandbox; default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// writeHTTPResponse sends a workflow's response: a string body as text,
// any other JSON value as JSON, under workflowResponseCSP and nosniff.
// Headers the response may not set (see flow.RefusedResponseHeader) are
// dropped: documents are checked for them when registered, but one
// stored before that rule may still hold them.
func writeHTTPResponse(w http.ResponseWriter, resp *domain.HTTPResponse) {
	h := w.Header()
	for k, v := range resp.Headers {
		if flow.RefusedResponseHeader(k) == "" {
			h.Set(k, v)
		}
	}
	h.Set("Content-Security-Policy", workflowResponseCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	var body []byte
	var text string
	switch {
	case len(resp.Body) == 0 || string(resp.Body) == "null":
	case json.Unmarshal(resp.Body, &text) == nil:
		body = []byte(text)
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "text/plain; charset=utf-8")
		}
	default:
		body = resp.Body
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "application/json")
		}
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// reportWork takes an async http step's report: {"success": true,
// "outputs": …}, {"success": false, "error": "…"} or {"success": false,
// "notCompleted": true}. A report is accepted only while the work item is
// active or not completed; one for a finished item — a repeat, or a
// different outcome — is refused with 400 work_item_finished and a body
// that says why, and changes nothing. One for an item whose run has ended
// (cancelled, say) is refused with 400 work_item_run_ended, and the item
// ends WorkFailed. Endpoints treat a 400 as final. A report holding text the databases do not store alike
// (a NUL, an unpaired surrogate) is refused with 400 invalid_json and
// changes nothing either, as is one the JSON API would refuse (see
// readReport). The receipt token in the URL is checked by its hash.
func (s *api) reportWork(w http.ResponseWriter, r *http.Request) error {
	if s.WorkReports == nil {
		return domain.ErrNotFound
	}
	o, err := s.readReport(w, r)
	if err != nil {
		return err
	}
	item, err := s.WorkReports.ReportWork(r.Context(), domain.WorkReport{
		WorkflowID: r.PathValue("flowId"), StepName: r.PathValue("stepId"), TokenHash: web.SHA256Bytes(r.PathValue("token")), Outcome: o})
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{"workItemId": item.ID, "state": item.State, "runId": item.RunID})
	return nil
}

// readReport reads a work report as strictly as the JSON API reads its
// bodies (duplicate names, names that differ only in case, unknown fields,
// NUL: 400 invalid_json), so that no parser's guess decides an outcome. Any
// Content-Type is taken: endpoints report from code the server does not
// control, and a report has one shape.
func (s *api) readReport(w http.ResponseWriter, r *http.Request) (domain.StepOutcome, error) {
	body, err := web.ReadBody(w, r, s.MaxBody)
	if err != nil {
		return domain.StepOutcome{}, err
	}
	if err := web.ValidateJSONValue(body); err != nil {
		return domain.StepOutcome{}, err
	}
	var rep flow.Report
	if err := web.UnmarshalAtomic(reflect.ValueOf(&rep), body); err != nil {
		return domain.StepOutcome{}, err
	}
	o, err := rep.Outcome()
	if err != nil {
		return domain.StepOutcome{}, &domain.ValidationError{Code: domain.CodeInvalidJSON, Message: "the report is " + err.Error()}
	}
	return o, nil
}
