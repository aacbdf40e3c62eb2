package flow

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A header that names a secret is sent with the secret's value, read from
// the server's environment at the call; literal values go as written.
func TestCallSendsSecretHeaderFromTheEnvironment(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		_, _ = w.Write([]byte(`{"success": true}`))
	}))
	defer srv.Close()
	any, _ := ParseAllowList("*")
	h := NewHTTPSteps(any, nil, nil)
	h.Secrets = func(name string) (string, bool) {
		v, ok := map[string]string{"PAYMENTS_TOKEN": "Bearer from-env"}[name]
		return v, ok
	}
	st := Step{Name: "charge", URL: srv.URL, Headers: map[string]HeaderValue{"Authorization": {Secret: "PAYMENTS_TOKEN"}, "X-Plain": {Value: "as written"}}}
	if _, err := h.call(t.Context(), st, stepBody{}, "token"); err != nil {
		t.Fatal(err)
	}
	hdr := <-got
	if hdr.Get("Authorization") != "Bearer from-env" || hdr.Get("X-Plain") != "as written" {
		t.Errorf("the endpoint received %v", hdr)
	}
}

// A secret the environment does not hold fails the call for good, before
// anything is sent, with an error that names the secret.
func TestCallWithAMissingSecretFailsForGood(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the call was made without its secret")
	}))
	defer srv.Close()
	any, _ := ParseAllowList("*")
	st := Step{Name: "charge", URL: srv.URL, Headers: map[string]HeaderValue{"Authorization": {Secret: "PAYMENTS_TOKEN"}}}
	for name, lookup := range map[string]func(string) (string, bool){
		"unset":      func(string) (string, bool) { return "", false },
		"no secrets": nil,
	} {
		h := NewHTTPSteps(any, nil, nil)
		h.Secrets = lookup
		_, err := h.call(t.Context(), st, stepBody{}, "token")
		if pe, ok := errors.AsType[*permanent](err); !ok || !strings.Contains(pe.msg, "secret PAYMENTS_TOKEN is not set") {
			t.Errorf("%s: call error = %v (%T); want a permanent error naming the secret", name, err, err)
		}
	}
	h := NewHTTPSteps(any, nil, nil)
	h.Secrets = func(string) (string, bool) { return "Bearer x\r\nX-Injected: 1", true }
	_, err := h.call(t.Context(), st, stepBody{}, "token")
	if pe, ok := errors.AsType[*permanent](err); !ok || strings.Contains(pe.msg, "Bearer") || !strings.Contains(pe.msg, "PAYMENTS_TOKEN") {
		t.Errorf("a secret holding a line break: %v; want a permanent error naming the secret, not its value", err)
	}
}
