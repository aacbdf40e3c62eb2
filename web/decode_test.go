package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tollgatehq/tollgate/domain"
)

// decisionRequest is shaped like a real request: a deciding bool, free text,
// a number and caller-defined raw JSON.
type decisionRequest struct {
	Approved bool            `json:"approved"`
	Comment  string          `json:"comment"`
	Amount   float64         `json:"amount"`
	Data     json.RawMessage `json:"data"`
	Timeout  time.Duration   `json:"timeout"`
}

const testMaxBytes = 1 << 20

func newJSONRequest(t *testing.T, contentType, body string) *http.Request {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/approvals/a1/decide", strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

// requireValidationError fails unless err is a *domain.ValidationError with
// code and a message containing msg.
func requireValidationError(t *testing.T, err error, code, msg string) *domain.ValidationError {
	t.Helper()
	ve, ok := errors.AsType[*domain.ValidationError](err)
	if !ok {
		t.Fatalf("error = %v (%T), want *domain.ValidationError", err, err)
	}
	if ve.Code != code {
		t.Fatalf("code = %q, want %q (message %q)", ve.Code, code, ve.Message)
	}
	if !strings.Contains(ve.Message, msg) {
		t.Fatalf("message = %q, want it to contain %q", ve.Message, msg)
	}
	return ve
}

func nestedArrays(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func TestDecodeJSONRejects(t *testing.T) {
	t.Parallel()
	const ct = "application/json"
	tests := []struct {
		name        string
		contentType string
		body        string
		code        string
		msg         string // substring of the message
		field       string // JSON pointer in Fields, if any
	}{
		{"duplicate key", ct, `{"approved":false,"approved":true}`, domain.CodeInvalidJSON, `duplicate name "approved"`, "/approved"},
		{"duplicate key nested in raw", ct, `{"data":{"a":1,"a":2}}`, domain.CodeInvalidJSON, `duplicate name "a"`, "/data/a"},
		{"case-insensitive key", ct, `{"APPROVED":true}`, domain.CodeInvalidJSON, `unknown field "APPROVED"`, "/APPROVED"},
		{"case-insensitive key after exact", ct, `{"approved":false,"Approved":true}`, domain.CodeInvalidJSON, `names "approved" and "Approved" differ only in case`, "/Approved"},
		{"case variants nested in raw", ct, `{"data":{"email":"ok@example.com","EMAIL":"victim@evil.test"}}`, domain.CodeInvalidJSON, `names "email" and "EMAIL" differ only in case`, "/data/EMAIL"},
		{"case variants deep in an array", ct, `{"data":[{"a":{"Who":1,"wHO":2}}]}`, domain.CodeInvalidJSON, "differ only in case", "/data/0/a/wHO"},
		{"case variants by the Kelvin sign", ct, `{"data":{"k":1,"\u212a":2}}`, domain.CodeInvalidJSON, "differ only in case", "/data/\u212a"},
		{"unknown field", ct, `{"approved":true,"admin":true}`, domain.CodeInvalidJSON, `unknown field "admin"`, "/admin"},
		{"truncated", ct, `{"approved":`, domain.CodeInvalidJSON, "unexpected end of input", "/approved"},
		{"truncated string", ct, `{"comment":"abc`, domain.CodeInvalidJSON, "unexpected end of input", "/comment"},
		{"trailing garbage", ct, `{"approved":true}x`, domain.CodeInvalidJSON, "at byte 17: unexpected data after the top-level value", ""},
		{"second value", ct, `{"approved":false} {"approved":true}`, domain.CodeInvalidJSON, "unexpected data after the top-level value", ""},
		{"NaN", ct, `{"amount":NaN}`, domain.CodeInvalidJSON, "invalid character 'N'", "/amount"},
		{"Infinity", ct, `{"amount":Infinity}`, domain.CodeInvalidJSON, "invalid character 'I'", "/amount"},
		{"1e400 into float64", ct, `{"amount":1e400}`, domain.CodeInvalidJSON, "number 1e400 is out of range", "/amount"},
		{"integer out of range", ct, `{"timeout":100000000000000000000}`, domain.CodeInvalidJSON, "number 100000000000000000000 is out of range for an integer", "/timeout"},
		{"wrong type", ct, `{"approved":"true"}`, domain.CodeInvalidJSON, "expected a boolean, got a string", "/approved"},
		{"fraction into duration", ct, `{"timeout":1.5}`, domain.CodeInvalidJSON, "", "/timeout"},
		{"array at top level", ct, `[]`, domain.CodeInvalidJSON, "expected an object, got an array", ""},
		{"deep nesting 10000", ct, `{"data":` + nestedArrays(10000) + `}`, domain.CodeInvalidJSON, "nesting is deeper than 64 levels", ""},
		{"deep nesting top level", ct, nestedArrays(10000), domain.CodeInvalidJSON, "nesting is deeper than 64 levels", ""},
		{"nesting 65", ct, `{"data":` + nestedArrays(64) + `}`, domain.CodeInvalidJSON, "nesting is deeper than 64 levels", ""},
		{"invalid UTF-8 in value", ct, "{\"comment\":\"\xff\xfe\"}", domain.CodeInvalidJSON, "invalid UTF-8", "/comment"},
		{"invalid UTF-8 in key", ct, "{\"\xc3\":1}", domain.CodeInvalidJSON, "invalid UTF-8", ""},
		{"NUL in key", ct, `{"appro\u0000ved":true}`, domain.CodeInvalidJSON, "NUL characters", ""},
		{"NUL in value", ct, `{"comment":"a\u0000b"}`, domain.CodeInvalidJSON, "NUL characters", "/comment"},
		{"1e400 inside raw message", ct, `{"data":{"n":[1e400]}}`, domain.CodeInvalidJSON, "number 1e400 is out of range", "/data/n/0"},
		{"NUL in raw message", ct, `{"data":{"note":["x","\u0000"]}}`, domain.CodeInvalidJSON, "NUL characters", "/data/note/1"},
		{"NUL in raw message key", ct, `{"data":{"k\u0000":1}}`, domain.CodeInvalidJSON, "NUL characters", "/data"},
		{"raw NUL byte", ct, "{\"comment\":\"a\x00b\"}", domain.CodeInvalidJSON, "invalid character", "/comment"},
		{"lone high surrogate", ct, `{"comment":"\ud800"}`, domain.CodeInvalidJSON, "surrogate", "/comment"},
		{"lone low surrogate in raw", ct, `{"data":"\udc00x"}`, domain.CodeInvalidJSON, "surrogate", "/data"},
		{"whitespace only", ct, " \n", domain.CodeInvalidJSON, "empty", ""},
		{"wrong content type", "text/plain", `{"approved":true}`, CodeUnsupportedMediaType, "not text/plain", ""},
		{"form content type", "application/x-www-form-urlencoded", `approved=true`, CodeUnsupportedMediaType, "application/json", ""},
		{"wrong content type, empty body", "text/plain", ``, CodeUnsupportedMediaType, "application/json", ""},
		{"json-ish prefix", "application/jsonp", `{}`, CodeUnsupportedMediaType, "application/json", ""},
		{"non-UTF-8 charset", "application/json; charset=iso-8859-1", `{}`, CodeUnsupportedMediaType, "UTF-8", ""},
		{"malformed content type", "application/json; charset", `{}`, CodeUnsupportedMediaType, "malformed", ""},
		{"missing content type with body", "", `{"approved":true}`, CodeUnsupportedMediaType, "Content-Type", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got decisionRequest
			err := DecodeJSON(httptest.NewRecorder(), newJSONRequest(t, tt.contentType, tt.body), &got, testMaxBytes)
			ve := requireValidationError(t, err, tt.code, tt.msg)
			if tt.field != "" && (len(ve.Fields) != 1 || ve.Fields[0].Field != tt.field) {
				t.Errorf("fields = %+v, want one for %q", ve.Fields, tt.field)
			}
			if !reflect.DeepEqual(got, decisionRequest{}) {
				t.Errorf("target changed on error: %+v", got)
			}
		})
	}
}

func TestDecodeJSONAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		contentType string
		body        string
		want        decisionRequest
	}{
		{
			name:        "full body with raw message",
			contentType: "application/json",
			body:        `{"approved":true,"comment":"ok ✓ \ud83d\ude00","amount":12.5,"data":{"b": [1, "x\n", null]},"timeout":1500000000}`,
			want: decisionRequest{
				Approved: true, Comment: "ok ✓ 😀", Amount: 12.5,
				Data: json.RawMessage(`{"b": [1, "x\n", null]}`), Timeout: 1500 * time.Millisecond,
			},
		},
		{"charset parameter", "application/json; charset=UTF-8", `{"approved":true}`, decisionRequest{Approved: true}},
		{"structured suffix", "application/merge-patch+json", `{"comment":"c"}`, decisionRequest{Comment: "c"}},
		{"upper-case media type", "Application/JSON", `{"amount":-0.5e1}`, decisionRequest{Amount: -5}},
		{"empty body without content type", "", ``, decisionRequest{}},
		{"empty body with content type", "application/json", ``, decisionRequest{}},
		{"whitespace around value", "application/json", " \t\n{\"approved\":true}\r\n ", decisionRequest{Approved: true}},
		{"raw null", "application/json", `{"data":null}`, decisionRequest{Data: json.RawMessage(`null`)}},
		{"escaped backslash before u0000", "application/json", `{"comment":"\\u0000"}`, decisionRequest{Comment: `\u0000`}},
		{"nesting 64", "application/json", `{"data":` + nestedArrays(63) + `}`, decisionRequest{Data: json.RawMessage(nestedArrays(63))}},
		{"max float", "application/json", `{"amount":1.7976931348623157e308}`, decisionRequest{Amount: 1.7976931348623157e308}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got decisionRequest
			if err := DecodeJSON(httptest.NewRecorder(), newJSONRequest(t, tt.contentType, tt.body), &got, testMaxBytes); err != nil {
				t.Fatalf("decodeJSON: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeJSONSizeLimit(t *testing.T) {
	t.Parallel()
	body := `{"comment":"` + strings.Repeat("x", 100) + `"}`
	tests := []struct {
		name     string
		maxBytes int64
		wantErr  bool
	}{
		{"one byte too many", int64(len(body)) - 1, true},
		{"far too many", 16, true},
		{"exactly the limit", int64(len(body)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got decisionRequest
			err := DecodeJSON(httptest.NewRecorder(), newJSONRequest(t, "application/json", body), &got, tt.maxBytes)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("decodeJSON: %v", err)
				}
				return
			}
			requireValidationError(t, err, CodePayloadTooLarge, "exceeds")
		})
	}
}

func TestDecodeJSONBoundsEcho(t *testing.T) {
	t.Parallel()
	name := strings.Repeat("é", 5000)
	err := DecodeJSON(httptest.NewRecorder(), newJSONRequest(t, "application/json", `{"`+name+`":1}`), &decisionRequest{}, testMaxBytes)
	ve := requireValidationError(t, err, domain.CodeInvalidJSON, "unknown field")
	if n := len(ve.Error()); n > 1000 {
		t.Errorf("error is %d bytes long, want the name cut short", n)
	}
	if !utf8.ValidString(ve.Error()) {
		t.Errorf("error is not valid UTF-8 after cutting: %q", ve.Error())
	}
}

func TestDecodeJSONHeaders(t *testing.T) {
	t.Parallel()
	r := newJSONRequest(t, "application/json", `{}`)
	r.Header.Add("Content-Type", "text/plain")
	err := DecodeJSON(httptest.NewRecorder(), r, &decisionRequest{}, testMaxBytes)
	requireValidationError(t, err, CodeUnsupportedMediaType, "more than one Content-Type")
}

func TestDecodeJSONKeepsTargetOnError(t *testing.T) {
	t.Parallel()
	got := decisionRequest{Comment: "default"}
	err := DecodeJSON(httptest.NewRecorder(), newJSONRequest(t, "application/json", `{"approved":true,"amount":1e400}`), &got, testMaxBytes)
	requireValidationError(t, err, domain.CodeInvalidJSON, "out of range")
	if want := (decisionRequest{Comment: "default"}); !reflect.DeepEqual(got, want) {
		t.Errorf("target = %+v, want it unchanged %+v", got, want)
	}
	// Fields absent from the body keep their value, as with encoding/json.
	err = DecodeJSON(httptest.NewRecorder(), newJSONRequest(t, "application/json", `{"approved":true}`), &got, testMaxBytes)
	if err != nil {
		t.Fatalf("decodeJSON: %v", err)
	}
	if want := (decisionRequest{Approved: true, Comment: "default"}); !reflect.DeepEqual(got, want) {
		t.Errorf("target = %+v, want %+v", got, want)
	}
}

func TestDecodeJSONBadTarget(t *testing.T) {
	t.Parallel()
	for _, v := range []any{decisionRequest{}, (*decisionRequest)(nil), nil} {
		err := DecodeJSON(httptest.NewRecorder(), newJSONRequest(t, "application/json", `{}`), v, testMaxBytes)
		if err == nil {
			t.Fatalf("decodeJSON(%T) succeeded, want an error", v)
		}
		if _, ok := errors.AsType[*domain.ValidationError](err); ok {
			t.Errorf("decodeJSON(%T) = %v, want a programming error, not a validation error", v, err)
		}
	}
}

func TestValidateJSONValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		msg  string // "" means valid
	}{
		{"object", `{"a":[1,2,{"b":null}],"c":"\u00e9"}`, ""},
		{"scalar", `"text"`, ""},
		{"number", ` 12 `, ""},
		{"unknown names are fine", `{"APPROVED":true}`, ""},
		{"depth 64", nestedArrays(64), ""},
		{"big and tiny numbers", `[1.7976931348623157e308,-1e308,1e-400,123456789012345678901234567890]`, ""},
		{"number overflow", `[-1e309]`, "number -1e309 is out of range"},
		{"depth 65", nestedArrays(65), "nesting is deeper than 64 levels"},
		{"duplicate", `[{"a":1,"a":1}]`, "duplicate name"},
		{"case variants in one object", `[{"id":1,"ID":1}]`, "differ only in case"},
		{"non-ASCII case variants", `{"\u00e9t\u00e9":1,"\u00c9T\u00c9":2}`, "differ only in case"},
		{"case variants in sibling objects", `[{"id":1},{"ID":1}]`, ""},
		{"case variants at different depths", `{"id":{"ID":1}}`, ""},
		{"NUL in key", `{"\u0000":1}`, "NUL characters"},
		{"NUL in value", `["\u0000"]`, "NUL characters"},
		{"NUL at top level", `"\u0000"`, "NUL characters"},
		{"lone surrogate", `"\ud800"`, "surrogate"},
		{"reversed surrogates", `"\udc00\ud800"`, "surrogate"},
		{"invalid UTF-8", "\"\xed\xa0\x80\"", "invalid UTF-8"},
		{"empty", ``, "empty"},
		{"trailing", `{} []`, "unexpected data after the top-level value"},
		{"trailing comma", `[1,]`, "invalid character"},
		{"single quotes", `{'a':1}`, "invalid character"},
		{"comment", `{} // x`, "unexpected data after the top-level value"},
		{"BOM", "\ufeff{}", "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateJSONValue([]byte(tt.data))
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("ValidateJSONValue: %v", err)
				}
				return
			}
			requireValidationError(t, err, domain.CodeInvalidJSON, tt.msg)
		})
	}
}

// fuzzTarget covers the kinds of field a request struct holds.
type fuzzTarget struct {
	Approved bool              `json:"approved"`
	Name     string            `json:"name"`
	Count    int               `json:"count"`
	Ratio    float64           `json:"ratio"`
	Tags     []string          `json:"tags"`
	Meta     map[string]any    `json:"meta"`
	Raw      json.RawMessage   `json:"raw"`
	Next     *fuzzTarget       `json:"next"`
	Wait     time.Duration     `json:"wait"`
	Labels   map[string]string `json:"labels"`
}

func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `{"approved":true}`, `{"approved":false,"approved":true}`, `{"APPROVED":true}`,
		`{"name":"a\u0000"}`, `{"raw":{"x":[1,2,{"y":"\ud83d\ude00"}]}}`, `{"raw":"\ud800"}`, `{"ratio":1e400}`,
		`{"count":1.0}`, `{"wait":5}`, `{"meta":{"a":1,"b":[true,null]}}`, `{"next":{"next":{"tags":["a","b"]}}}`,
		`{"labels":{"k":"v"}}`, `{"name":"x"} x`, "{\"name\":\"\xff\"}", nestedArrays(70),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		var got fuzzTarget
		err := DecodeJSON(httptest.NewRecorder(), r, &got, 1<<16)
		if err != nil {
			if _, ok := errors.AsType[*domain.ValidationError](err); !ok {
				t.Fatalf("decodeJSON(%q) = %v, want a *domain.ValidationError", body, err)
			}
			return
		}
		out, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("re-marshal accepted %q: %v", body, err)
		}
		if !json.Valid(out) {
			t.Fatalf("re-marshal of accepted %q is not valid JSON: %s", body, out)
		}
		if body == "" {
			return
		}
		if err := ValidateJSONValue([]byte(body)); err != nil {
			t.Fatalf("accepted %q but ValidateJSONValue says %v", body, err)
		}
		// Whatever we accept, encoding/json must read the same way: no
		// parser differential between the two.
		var v1 fuzzTarget
		if err := json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&v1); err != nil {
			t.Fatalf("accepted %q but encoding/json says %v", body, err)
		}
		if !reflect.DeepEqual(got, v1) {
			t.Fatalf("accepted %q differently from encoding/json:\n got %+v\nv1 %+v", body, got, v1)
		}
	})
}

// Any schema and any form posted against it are read without a panic: a
// schema the form generator takes gives fields, and whatever is typed in
// them becomes JSON that encodes, or field errors at JSON Pointers.
func FuzzSchemaForm(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"type": "object", "properties": {"amount": {"type": "number"}, "note": {"type": "string"}}, "required": ["amount"]}`, "amount=12.5&note=hi"},
		{`{"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}, "ok": {"type": "boolean"}}}`, "when=2026-04-15T09:00&ok=true"},
		{`{"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "integer"}}}}`, "tags=1%0A2%0Ax"},
		{`{"type": "object", "properties": {"a": {"type": "object", "properties": {"b/c~d": {"type": "integer"}}}}}`, "a%2Fb~1c~0d=7"},
		{`{"type": "object", "properties": {"n": {"type": "number"}}}`, "n=1e400"},
		{`{"type": "string"}`, "x=1"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, schema, query string) {
		fields, ok := FormFields(json.RawMessage(schema))
		if !ok {
			return
		}
		form, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		v, shown, errs := FormValue(fields, form, time.UTC)
		if len(shown) != len(fields) {
			t.Fatalf("%d fields shown for %d", len(shown), len(fields))
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("the form %q against %s gave a value that does not encode: %v", query, schema, err)
		}
		for _, fe := range errs {
			if !strings.HasPrefix(fe.Field, "/") {
				t.Fatalf("a field error at %q, not a JSON Pointer", fe.Field)
			}
		}
	})
}
