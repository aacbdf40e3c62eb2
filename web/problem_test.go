package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tollgatehq/tollgate/domain"
)

func TestProblemFor(t *testing.T) {
	t.Parallel()
	fields := []domain.FieldError{{Field: "/amount", Message: "must be positive"}}
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
		wantDetail string
		wantErrors []domain.FieldError
		wantExtra  map[string]any
	}{
		{
			name:       "invalid JSON",
			err:        &domain.ValidationError{Code: domain.CodeInvalidJSON, Message: "invalid JSON at byte 3: x"},
			wantStatus: http.StatusBadRequest, wantCode: domain.CodeInvalidJSON, wantDetail: "invalid JSON at byte 3: x",
		},
		{
			name:       "unsupported media type",
			err:        unsupportedMediaType("Content-Type must be application/json, not text/plain"),
			wantStatus: http.StatusUnsupportedMediaType, wantCode: CodeUnsupportedMediaType,
			wantDetail: "Content-Type must be application/json, not text/plain",
		},
		{
			name:       "payload too large",
			err:        &domain.ValidationError{Code: CodePayloadTooLarge, Message: "too big"},
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: CodePayloadTooLarge, wantDetail: "too big",
		},
		{
			name:       "max bytes error from a handler's own read",
			err:        fmt.Errorf("read form: %w", &http.MaxBytesError{Limit: 10}),
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: CodePayloadTooLarge, wantDetail: "The request body is too large.",
		},
		{
			name:       "rule broken, wrapped",
			err:        fmt.Errorf("start run: %w", &domain.ValidationError{Code: domain.CodeValidation, Message: "bad input", Fields: fields}),
			wantStatus: http.StatusUnprocessableEntity, wantCode: domain.CodeValidation, wantDetail: "bad input", wantErrors: fields,
		},
		{
			name:       "validation without code",
			err:        &domain.ValidationError{Message: "bad"},
			wantStatus: http.StatusUnprocessableEntity, wantCode: domain.CodeValidation, wantDetail: "bad",
		},
		{
			name: "conflict with detail",
			err: fmt.Errorf("resume: %w", &domain.ConflictError{
				Code: domain.CodeAlreadyResumed, Message: "already resumed",
				Detail: map[string]any{"resumedBy": "u1", "resumedAt": "2026-01-02T03:04:05Z"},
			}),
			wantStatus: http.StatusConflict, wantCode: domain.CodeAlreadyResumed, wantDetail: "already resumed",
			wantExtra: map[string]any{"resumedBy": "u1", "resumedAt": "2026-01-02T03:04:05Z"},
		},
		{
			name:       "not found",
			err:        fmt.Errorf("get run r1: %w", domain.ErrNotFound),
			wantStatus: http.StatusNotFound, wantCode: domain.CodeNotFound, wantDetail: "The requested resource does not exist.",
		},
		{
			name:       "plain conflict",
			err:        fmt.Errorf("update run r1: %w", domain.ErrConflict),
			wantStatus: http.StatusConflict, wantCode: domain.CodeConflict,
			wantDetail: "The resource is not in a state that allows this change.",
		},
		{
			name:       "unexpected",
			err:        errors.New("dial tcp 10.0.0.7:5432: secret-host refused"),
			wantStatus: http.StatusInternalServerError, wantCode: "internal", wantDetail: "An internal error occurred.",
		},
		{
			name:       "stale claim is internal",
			err:        fmt.Errorf("complete job: %w", domain.ErrStale),
			wantStatus: http.StatusInternalServerError, wantCode: "internal", wantDetail: "An internal error occurred.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := ProblemFor(tt.err)
			if p.Status != tt.wantStatus || p.Code != tt.wantCode || p.Detail != tt.wantDetail {
				t.Errorf("problemFor = status %d code %q detail %q, want %d %q %q",
					p.Status, p.Code, p.Detail, tt.wantStatus, tt.wantCode, tt.wantDetail)
			}
			if want := "urn:tollgate:problem:" + tt.wantCode; p.Type != want {
				t.Errorf("type = %q, want %q", p.Type, want)
			}
			if p.Title != http.StatusText(tt.wantStatus) {
				t.Errorf("title = %q, want %q", p.Title, http.StatusText(tt.wantStatus))
			}
			if !reflect.DeepEqual(p.Errors, tt.wantErrors) {
				t.Errorf("errors = %+v, want %+v", p.Errors, tt.wantErrors)
			}
			if len(p.Extra) != 0 || len(tt.wantExtra) != 0 {
				if !reflect.DeepEqual(p.Extra, tt.wantExtra) {
					t.Errorf("extra = %v, want %v", p.Extra, tt.wantExtra)
				}
			}
		})
	}
}

// writtenProblem records WriteProblem's response and decodes its body.
func writtenProblem(t *testing.T, p Problem) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/runs/r1/resume?token=secret", nil)
	WriteProblem(rec, r, p)
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	return rec, body
}

func TestWriteProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		problem    Problem
		wantStatus int
		want       map[string]any
	}{
		{
			name: "conflict with extra merged at top level",
			problem: ProblemFor(&domain.ConflictError{
				Code: domain.CodeAlreadyResumed, Message: "already resumed",
				Detail: map[string]any{"resumedBy": "u1", "resumedAt": "2026-01-02T03:04:05Z"},
			}),
			wantStatus: http.StatusConflict,
			want: map[string]any{
				"type": "urn:tollgate:problem:already_resumed", "title": "Conflict", "status": float64(409),
				"detail": "already resumed", "code": "already_resumed", "instance": "/runs/r1/resume",
				"resumedBy": "u1", "resumedAt": "2026-01-02T03:04:05Z",
			},
		},
		{
			name:       "validation with field errors",
			problem:    ProblemFor(&domain.ValidationError{Code: domain.CodeValidation, Message: "bad", Fields: []domain.FieldError{{Field: "/a", Message: "required"}}}),
			wantStatus: http.StatusUnprocessableEntity,
			want: map[string]any{
				"type": "urn:tollgate:problem:validation_failed", "title": "Unprocessable Entity", "status": float64(422),
				"detail": "bad", "code": "validation_failed", "instance": "/runs/r1/resume",
				"errors": []any{map[string]any{"field": "/a", "message": "required"}},
			},
		},
		{
			name:       "zero problem gets defaults",
			problem:    Problem{},
			wantStatus: http.StatusInternalServerError,
			want: map[string]any{
				"type": "about:blank", "title": "Internal Server Error", "status": float64(500), "instance": "/runs/r1/resume",
			},
		},
		{
			name: "extra cannot override standard members",
			problem: Problem{Status: http.StatusNotFound, Code: "not_found", Instance: "/x", Extra: map[string]any{
				"status": 200, "type": "evil", "errors": "none", "hint": "check the id",
			}},
			wantStatus: http.StatusNotFound,
			want: map[string]any{
				"type": "urn:tollgate:problem:not_found", "title": "Not Found", "status": float64(404),
				"code": "not_found", "instance": "/x", "hint": "check the id",
			},
		},
		{
			name:       "unencodable extra is dropped",
			problem:    Problem{Status: http.StatusConflict, Code: "conflict", Extra: map[string]any{"ch": make(chan int)}},
			wantStatus: http.StatusConflict,
			want: map[string]any{
				"type": "urn:tollgate:problem:conflict", "title": "Conflict", "status": float64(409),
				"code": "conflict", "instance": "/runs/r1/resume",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec, body := writtenProblem(t, tt.problem)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if !reflect.DeepEqual(body, tt.want) {
				t.Errorf("body = %v\nwant   %v", body, tt.want)
			}
		})
	}
}

func TestProblemMarshalOrder(t *testing.T) {
	t.Parallel()
	p := Problem{Type: "about:blank", Title: "Conflict", Status: 409, Detail: "d", Code: "c", Extra: map[string]any{"b": 1, "a": true}}
	got, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"about:blank","title":"Conflict","status":409,"detail":"d","code":"c","a":true,"b":1}`
	if string(got) != want {
		t.Errorf("Marshal = %s\nwant      %s", got, want)
	}
}

func TestWriteProblemHidesInternalError(t *testing.T) {
	t.Parallel()
	rec, body := writtenProblem(t, ProblemFor(errors.New("pq: password authentication failed for user tollgate")))
	if rec.Code != http.StatusInternalServerError || body["code"] != "internal" {
		t.Fatalf("got %d %v, want 500 internal", rec.Code, body)
	}
	if strings.Contains(rec.Body.String(), "password") {
		t.Errorf("body leaks the error text: %s", rec.Body)
	}
}

func TestWriteJSON(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	WriteJSON(rec, http.StatusCreated, map[string]any{"id": "r1", "html": "<b>"})
	if rec.Code != http.StatusCreated {
		t.Errorf("status = %d, want 201", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if want := map[string]any{"id": "r1", "html": "<b>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("body = %v, want %v", got, want)
	}

	rec = httptest.NewRecorder()
	WriteJSON(rec, http.StatusOK, map[string]any{"ch": make(chan int)})
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("unencodable value: status = %d, want 500", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("unencodable value: Content-Type = %q, want application/problem+json", ct)
	}
}

// TestDecodeJSONStatuses checks DecodeJSON and the problem mapping together,
// the way a handler uses them.
func TestDecodeJSONStatuses(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req decisionRequest
		if err := DecodeJSON(w, r, &req, 64); err != nil {
			WriteProblem(w, r, ProblemFor(err))
			return
		}
		WriteJSON(w, http.StatusOK, req)
	})
	tests := []struct {
		name        string
		contentType string
		body        string
		wantStatus  int
		wantCode    string
	}{
		{"ok", "application/json", `{"approved":true}`, http.StatusOK, ""},
		{"empty body without content type", "", ``, http.StatusOK, ""},
		{"duplicate key", "application/json", `{"approved":false,"approved":true}`, http.StatusBadRequest, domain.CodeInvalidJSON},
		{"NUL", "application/json", `{"comment":"\u0000"}`, http.StatusBadRequest, domain.CodeInvalidJSON},
		{"wrong content type", "text/plain", `{}`, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType},
		{"too big", "application/json", `{"comment":"` + strings.Repeat("x", 64) + `"}`, http.StatusRequestEntityTooLarge, CodePayloadTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, newJSONRequest(t, tt.contentType, tt.body))
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantCode == "" {
				return
			}
			var p map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if p["code"] != tt.wantCode {
				t.Errorf("code = %v, want %q", p["code"], tt.wantCode)
			}
		})
	}
}

// A database that restarts or cannot be reached answers 503
// database_unavailable, which callers retry; any other database error is
// still a 500.
func TestProblemForAnUnavailableDatabase(t *testing.T) {
	for name, c := range map[string]struct {
		err  error
		want int
	}{
		"shutting down":      {fmt.Errorf("get run r: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}), http.StatusServiceUnavailable},
		"starting up":        {&pgconn.PgError{Code: "57P03"}, http.StatusServiceUnavailable},
		"connection failure": {&pgconn.PgError{Code: "08006"}, http.StatusServiceUnavailable},
		"refused":            {fmt.Errorf("claim: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), http.StatusServiceUnavailable},
		"a broken statement": {&pgconn.PgError{Code: "42601"}, http.StatusInternalServerError},
		"anything else":      {errors.New("boom"), http.StatusInternalServerError},
	} {
		p := ProblemFor(c.err)
		if p.Status != c.want || (c.want == http.StatusServiceUnavailable) != (p.Code == CodeDatabaseUnavailable) {
			t.Errorf("%s: %d %s; want %d", name, p.Status, p.Code, c.want)
		}
	}
}
