package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// brokenBody is a request body whose sender went away mid-way.
type brokenBody struct{}

func (brokenBody) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
func (brokenBody) Close() error             { return nil }

// unreachableWork fails the test if a report that could not be read gets
// as far as the engine.
type unreachableWork struct {
	t *testing.T
}

func (u unreachableWork) ReportWork(context.Context, domain.WorkReport) (domain.WorkItem, error) {
	u.t.Error("a report that could not be read reached the engine")
	return domain.WorkItem{}, errors.New("unreachable")
}

// A report whose body cannot be read, or is too large, is the caller's
// fault (4xx), like any other request body the server reads.
func TestReportWorkBodyErrors(t *testing.T) {
	t.Parallel()
	s := &api{&web.Server{WorkReports: unreachableWork{t: t}, MaxBody: 64, Log: slog.New(slog.DiscardHandler), Clock: domain.SystemClock{}}}
	for _, tt := range []struct {
		name   string
		body   io.ReadCloser
		status int
		code   string
	}{
		{"aborted", brokenBody{}, http.StatusBadRequest, domain.CodeInvalidJSON},
		{"too large", io.NopCloser(strings.NewReader(`{"success": true, "outputs": "` + strings.Repeat("x", 100) + `"}`)), http.StatusRequestEntityTooLarge, web.CodePayloadTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/webhook/flow/step/token", nil)
			r.Body = tt.body
			r.SetPathValue("flowId", "flow")
			r.SetPathValue("stepId", "step")
			r.SetPathValue("token", "token")
			w := httptest.NewRecorder()
			s.Handle(s.reportWork).ServeHTTP(w, r)
			var p struct{ Code string }
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != tt.status || p.Code != tt.code {
				t.Errorf("report = %d %s; want %d %s", w.Code, w.Body, tt.status, tt.code)
			}
		})
	}
}

// A workflow's response may set its own headers, but not replace the
// server's security headers or its cookies: a response served as HTML on
// the app's origin is sandboxed and stays inert.
func TestWorkflowResponseKeepsSecurityHeaders(t *testing.T) {
	t.Parallel()
	h := web.SecurityHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeHTTPResponse(w, &domain.HTTPResponse{Status: http.StatusOK, Body: json.RawMessage(`"<script>alert(1)</script>"`), Headers: map[string]string{
			"Content-Type": "text/html", "content-security-policy": "default-src *", "X-Content-Type-Options": "sniff",
			"Set-Cookie": "tollgate_session=x", "X-Step": "confirm",
		}})
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/webhooks/wf", nil))
	got := w.Header()
	if got.Get("Content-Security-Policy") != workflowResponseCSP || got.Get("X-Content-Type-Options") != "nosniff" || got.Get("Set-Cookie") != "" {
		t.Errorf("the server's headers were replaced: %v", got)
	}
	if got.Get("X-Step") != "confirm" || got.Get("Content-Type") != "text/html" {
		t.Errorf("the workflow's own headers were lost: %v", got)
	}
}

// A response stored before documents were checked for them may still set
// headers acting on the app's origin; they are dropped when it is
// answered, whatever their case.
func TestWorkflowResponseDropsOriginHeaders(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	writeHTTPResponse(w, &domain.HTTPResponse{Status: http.StatusOK, Body: json.RawMessage(`"ok"`), Headers: map[string]string{
		"location": "https://evil.example", "REFRESH": "0;url=https://evil.example", "Clear-Site-Data": `"*"`,
		"set-cookie": "tollgate_session=x", "Access-Control-Allow-Origin": "*", "access-control-allow-credentials": "true",
		"Strict-Transport-Security": "max-age=0", "X-Step": "confirm",
	}})
	for _, h := range []string{"Location", "Refresh", "Clear-Site-Data", "Set-Cookie", "Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Strict-Transport-Security"} {
		if v := w.Header().Values(h); len(v) > 0 {
			t.Errorf("%s was answered: %q", h, v)
		}
	}
	if w.Header().Get("X-Step") != "confirm" {
		t.Errorf("the workflow's own header was lost: %v", w.Header())
	}
}

// Any body posted as an async step's report is read as strictly as the
// API's bodies without a panic: an outcome with exactly one of success,
// failure or not-completed, or a validation error.
func FuzzReadReport(f *testing.F) {
	for _, seed := range []string{`{"success": true, "outputs": {"a": 1}}`, `{"success": false, "error": "no"}`,
		`{"success": false, "notCompleted": true}`, `{"success":false,"success":true}`, `{"Success": true}`, `{"success": true, "x": 1}`,
		``, `[]`, `{"success": "yes"}`, "{\"error\": \"\\u0000\"}", strings.Repeat("[", 70) + strings.Repeat("]", 70)} {
		f.Add(seed)
	}
	s := &api{&web.Server{MaxBody: 1 << 16}}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, "/webhook/f/s/t", strings.NewReader(body))
		o, err := s.readReport(httptest.NewRecorder(), r)
		if err != nil {
			if _, ok := errors.AsType[*domain.ValidationError](err); !ok {
				t.Fatalf("readReport(%q) = %T %v, want a *domain.ValidationError", body, err, err)
			}
			return
		}
		if o.Success && o.NotCompleted {
			t.Fatalf("readReport(%q) took a success that is also not completed", body)
		}
	})
}
