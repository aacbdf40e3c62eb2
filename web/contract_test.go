package web_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"github.com/tollgatehq/tollgate/web/api"
)

// The API's tests are its contract's tests too: every exchange a test
// server has with the API's routes is checked against the OpenAPI document
// it serves, so that an answer the document does not describe fails the
// test that got it. Requests are checked when the server took them (a
// 2xx answer): a request the document refuses should not be taken, while
// the tests send many that both refuse on purpose.

// validators check exchanges against the document: v the requests and
// answers, lines the lines of NDJSON answers, by the path that gives them.
type validators struct {
	v     validator.Validator
	lines map[string]*base.Schema
}

// ndjsonLines are the schemas of the lines of each NDJSON answer, by the
// end of the path that gives it.
var ndjsonLines = map[string]string{"/bulk": "BulkLine", "/audit/export": "AuditEntry"}

// contract is the document's validators, made once.
var contract = sync.OnceValues(func() (validators, error) {
	doc, err := libopenapi.NewDocument(api.OpenAPI())
	if err != nil {
		return validators{}, err
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		return validators{}, fmt.Errorf("the OpenAPI document: %v", errs)
	}
	if ok, errs := v.ValidateDocument(); !ok {
		return validators{}, fmt.Errorf("the OpenAPI document is not valid OpenAPI 3.1:%s", describeViolations(errs))
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return validators{}, err
	}
	lines := map[string]*base.Schema{}
	for suffix, name := range ndjsonLines {
		sch := model.Model.Components.Schemas.GetOrZero(name)
		if sch == nil {
			return validators{}, fmt.Errorf("the OpenAPI document has no %s schema", name)
		}
		lines[suffix] = sch.Schema()
	}
	return validators{v: v, lines: lines}, nil
})

// contractMu serialises the validator's use: its caches are not all safe
// for concurrent use.
var contractMu sync.Mutex

// documented says whether the document describes the route of path.
func documented(path string) bool {
	for _, p := range []string{"/api/", "/v1/", "/webhook/", "/healthz", "/readyz", "/metrics"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// checkContract checks each exchange of next with a documented route
// against the document, failing t when one does not match.
func checkContract(t testing.TB, next http.Handler) http.Handler {
	c, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	lines := schema_validation.NewSchemaValidator()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !documented(r.URL.Path) || r.Header.Get("Upgrade") != "" {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		req := r.Clone(r.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		resp := &http.Response{StatusCode: rec.status, Header: rec.Header().Clone(), Body: io.NopCloser(bytes.NewReader(rec.body.Bytes())), Request: req}
		ct := resp.Header.Get("Content-Type")
		switch {
		case strings.HasPrefix(ct, "text/event-stream"):
			return // a stream of events, which the document names and does not describe line by line
		case rec.status == http.StatusNotFound && (strings.HasPrefix(ct, "text/html") || strings.HasPrefix(ct, "text/plain")):
			return // a page's 404, or Go's: the route is not served here (metrics on a listener of their own)
		}
		contractMu.Lock()
		var errs []*verrors.ValidationError
		switch {
		case strings.HasPrefix(ct, "application/x-ndjson"):
			_, errs = c.v.ValidateHttpRequest(req)
			var schema *base.Schema
			for suffix, sch := range c.lines {
				if strings.HasSuffix(r.URL.Path, suffix) {
					schema = sch
				}
			}
			if schema == nil {
				t.Errorf("%s %s answered NDJSON, whose lines the test does not know", r.Method, r.URL.Path)
				break
			}
			for line := range strings.Lines(rec.body.String()) {
				_, lineErrs := lines.ValidateSchemaString(schema, line)
				errs = append(errs, lineErrs...)
			}
		case rec.status >= 200 && rec.status < 300:
			_, errs = c.v.ValidateHttpRequestResponse(req, resp)
		default:
			_, errs = c.v.ValidateHttpResponse(req, resp)
		}
		contractMu.Unlock()
		if (rec.status == http.StatusNotFound || rec.status == http.StatusMethodNotAllowed) && onlyUnknownPaths(errs) {
			return // the API's answer to a path or method it does not have, which no document lists
		}
		if len(errs) > 0 {
			t.Errorf("%s %s answered %d, which the OpenAPI document does not describe:%s\nrequest: %.300s\nanswer: %.600s",
				r.Method, r.URL.Path, rec.status, describeViolations(errs), body, rec.body.String())
		}
	})
}

func onlyUnknownPaths(errs []*verrors.ValidationError) bool {
	for _, e := range errs {
		if e.ValidationType != helpers.PathValidation {
			return false
		}
	}
	return true
}

func describeViolations(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  %s: %s", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    at %s: %s (%s)", f.FieldPath, f.Reason, f.KeywordLocation)
		}
	}
	return b.String()
}

// recorder passes an answer through and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.wrote, r.status = true, code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush passes streamed answers (bulk actions' lines) on as they come.
func (r *recorder) Flush() { http.NewResponseController(r.ResponseWriter).Flush() }

// Hijack hands the connection over (a websocket, which is not the API's).
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// complaints is a test that keeps what checkContract reports.
type complaints struct {
	testing.TB
	mu   sync.Mutex
	said []string
}

func (c *complaints) Errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.said = append(c.said, fmt.Sprintf(format, args...))
}

// The contract check itself fails a test whose exchange the document
// does not describe, and passes one it does.
func TestContractCheckCatchesUndocumentedAnswers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, method, path, status, body string
		complains                        bool
	}{
		{"a run as described", "GET", "/api/v1/runs/r-1", "200", `{"id":"r-1","workflowId":"w","workflowVersion":"1","status":"running","input":null,"output":null,"error":null,"createdAt":"2026-11-30T00:00:00Z","updatedAt":"2026-11-30T00:00:00Z"}`, false},
		{"a run whose status is not one", "GET", "/api/v1/runs/r-1", "200", `{"id":"r-1","workflowId":"w","workflowVersion":"1","status":"sleeping","input":null,"output":null,"error":null,"createdAt":"2026-11-30T00:00:00Z","updatedAt":"2026-11-30T00:00:00Z"}`, true},
		{"a status the operation does not have", "GET", "/api/v1/runs/r-1", "418", `{"type":"about:blank","title":"teapot","status":418}`, true},
		{"a bulk line that is neither", "POST", "/api/v1/runs/bulk", "200", "{\"id\":\"r-1\",\"ok\":true}\n{\"what\":1}\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &complaints{TB: t}
			h := checkContract(c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ct := "application/json"
				if strings.HasSuffix(r.URL.Path, "/bulk") {
					ct = "application/x-ndjson"
				} else if tt.status != "200" {
					ct = "application/problem+json"
				}
				w.Header().Set("Content-Type", ct)
				var code int
				fmt.Sscan(tt.status, &code)
				w.WriteHeader(code)
				io.WriteString(w, tt.body)
			}))
			r := httptest.NewRequest(tt.method, tt.path, strings.NewReader(`{"action":"cancel","ids":["r-1"]}`))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer k")
			h.ServeHTTP(httptest.NewRecorder(), r)
			if complained := len(c.said) > 0; complained != tt.complains {
				t.Errorf("complained %v, want %v: %v", complained, tt.complains, c.said)
			}
		})
	}
}
