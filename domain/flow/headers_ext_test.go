package flow_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain/flow"
)

func httpDoc(headers string) string {
	return `{"id": "charge", "version": "1", "steps": [{"type": "http", "name": "charge", "url": "https://payments.example.com/", "headers": ` + headers + `}]}`
}

// A header value is a string or {"$secret": "NAME"}; anything else is
// reported at the header's own path, without repeating the value.
func TestParseHTTPHeaders(t *testing.T) {
	t.Parallel()
	doc, err := flow.Parse([]byte(httpDoc(`{"Authorization": {"$secret": "PAYMENTS_TOKEN"}, "X-Plain": "v"}`)), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if h := doc.Steps[0].Headers; h["Authorization"] != (flow.HeaderValue{Secret: "PAYMENTS_TOKEN"}) || h["X-Plain"] != (flow.HeaderValue{Value: "v"}) {
		t.Errorf("headers = %+v", h)
	}
	got := problems(t, httpDoc(`{"A": {"$secret": "lower_case"}, "B": {"$secret": "OK", "x": 1}, "C": {"$Secret": "OK"}, "D": 42,
		"E": null, "F": "line\nbreak", "G": {"$secret": "9LIVES"}, "Bad Name": "v", "H": {"$secret": "sk_live_abc"}}`))
	want := []string{
		`steps[0].headers.A: "$secret" is the name`,
		`steps[0].headers.B: a secret reference has exactly one member`,
		`steps[0].headers.C: a secret reference has exactly one member`,
		`steps[0].headers.D: a header value is a string or {"$secret": "NAME"}`,
		`steps[0].headers.E: a header value is a string or {"$secret": "NAME"}`,
		`steps[0].headers.F: a header value may not hold a control character`,
		`steps[0].headers.G: "$secret" is the name`,
		`steps[0].headers.H: "$secret" is the name`,
		`steps[0].headers["Bad Name"]: is not a valid header name`,
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) || strings.Contains(got[i], "sk_live") {
			t.Errorf("problem %q; want %q…", got[i], want[i])
		}
	}
}

// A document is shown with its literal header values masked and its secret
// references as written; nothing else changes.
func TestRedactDocument(t *testing.T) {
	t.Parallel()
	body := httpDoc(`{"Authorization": "Bearer sk_live_abc", "X-Token": {"$secret": "PAYMENTS_TOKEN"}}`)
	got, err := flow.RedactDocument([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := flow.Canonical([]byte(httpDoc(`{"Authorization": "***", "X-Token": {"$secret": "PAYMENTS_TOKEN"}}`)))
	if string(got) != string(want) || strings.Contains(string(got), "sk_live") {
		t.Errorf("redacted:\n%s\nwant:\n%s", got, want)
	}
	// A headers field that is not an object of values is masked whole.
	odd, err := flow.RedactDocument([]byte(`{"steps": [{"headers": "Bearer sk_live_abc"}, {"headers": {"A": {"$secret": "X", "v": "sk_live_abc"}}}, 7]}`))
	if err != nil || strings.Contains(string(odd), "sk_live") {
		t.Errorf("odd document redacted to %s (%v)", odd, err)
	}
	if _, err := flow.RedactDocument([]byte(`{`)); err == nil {
		t.Error("a broken body was shown")
	}
	var v any
	if json.Unmarshal(got, &v) != nil {
		t.Errorf("not JSON: %s", got)
	}
}

// A webhook step's responseToSend may not set headers that act on the
// app's origin or frame the message, in any case; each is reported.
func TestParseRefusesOriginResponseHeaders(t *testing.T) {
	t.Parallel()
	got := problems(t, `{"id": "hook", "version": "1", "steps": [{"type": "webhook", "name": "w", "responseToSend": {"headers": {
		"Location": "/x", "refresh": "0", "Clear-Site-Data": "*", "Set-Cookie": "a=b", "access-control-allow-origin": "*",
		"Transfer-Encoding": "chunked", "Content-Length": "1", "X-Fine": "yes", "X-Bad": "a\nb"}}}]}`)
	const at = "steps[0].responseToSend.headers"
	for _, h := range []string{"Location", "refresh", "Clear-Site-Data", "Set-Cookie", "access-control-allow-origin", "Transfer-Encoding", "Content-Length", "X-Bad"} {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, at+"."+h+": ") }) {
			t.Errorf("%s is not refused: %v", h, got)
		}
	}
	if len(got) != 8 {
		t.Errorf("problems: %v", got)
	}
}
