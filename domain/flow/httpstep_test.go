package flow

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestAllowList(t *testing.T) {
	def, err := ParseAllowList("")
	if err != nil {
		t.Fatal(err)
	}
	listed, err := ParseAllowList(" api.example.com, 10.0.0.7:8443 ,*.corp.example,[::1]:9000")
	if err != nil {
		t.Fatal(err)
	}
	any, _ := ParseAllowList("*")
	for _, c := range []struct {
		list *AllowList
		url  string
		want bool
	}{
		{def, "https://api.example.com/x", true},
		{def, "http://8.8.8.8/", true},
		{def, "http://127.0.0.1:8080/", false},
		{def, "http://localhost/", false},
		{def, "http://10.1.2.3/", false},
		{def, "http://192.168.0.1/", false},
		{def, "http://169.254.169.254/latest/meta-data", false},
		{def, "http://100.64.0.1/", false},
		{def, "http://[::1]/", false},
		{def, "http://[fd00::1]/", false},
		{listed, "https://api.example.com/x", true},
		{listed, "https://other.example.com/x", false},
		{listed, "https://10.0.0.7:8443/", true},
		{listed, "https://10.0.0.7/", false},
		{listed, "http://build.corp.example/", true},
		{listed, "http://corp.example.evil/", false},
		{listed, "http://[::1]:9000/", true},
		{any, "http://127.0.0.1/", true},
	} {
		u, _ := url.Parse(c.url)
		if got := c.list.Allows(u); got != c.want {
			t.Errorf("%s allows %s = %v, want %v", c.list, c.url, got, c.want)
		}
	}
	// The default policy checks the address actually dialled.
	if def.control("tcp", "127.0.0.1:80", nil) == nil || def.control("tcp", "93.184.216.34:443", nil) != nil || listed.control("tcp", "127.0.0.1:80", nil) != nil {
		t.Error("dial control")
	}
	for _, bad := range []string{"http://x", "a/b", "x*y.com", "user@host"} {
		if _, err := ParseAllowList(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// A name that resolves to a loopback address is refused when it is dialled,
// and the refusal is permanent: a retry would dial the same address.
func TestCallRefusesANonPublicAddressForGood(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the call reached the loopback server")
	}))
	defer srv.Close()
	def, err := ParseAllowList("")
	if err != nil {
		t.Fatal(err)
	}
	h := NewHTTPSteps(def, nil, nil)
	tr := h.Client.Transport.(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dial(ctx, network, srv.Listener.Addr().String()) // as if api.example.com resolved to it
	}
	_, err = h.call(t.Context(), Step{Name: "s", URL: "http://api.example.com/"}, stepBody{}, "token")
	if pe, ok := errors.AsType[*permanent](err); !ok || !strings.Contains(pe.msg, "is not a public address") {
		t.Fatalf("call error = %v (%T), want a permanent refusal", err, err)
	}
}

// A StepResult holding text the databases do not store alike (a NUL, an
// unpaired surrogate) is refused, whether it comes as a work report or as an
// endpoint's answer; for an answer the refusal is a permanent step failure,
// since calling again would store nothing better.
func TestDecodeOutcomeRefusesUnstorableText(t *testing.T) {
	t.Parallel()
	bad := []string{
		`{"success": true, "outputs": {"label": "a\u0000b"}}`,
		`{"success": true, "outputs": ["\ud800"]}`,
		`{"success": false, "error": "a\u0000b"}`,
	}
	for _, body := range bad {
		if o, err := DecodeOutcome([]byte(body)); err == nil || !strings.Contains(err.Error(), "cannot be stored") {
			t.Errorf("DecodeOutcome(%s) = %+v, %v; want a refusal saying it cannot be stored", body, o, err)
		}
	}
	if _, err := DecodeOutcome([]byte(`{"success": false, "error": "a\\u0000b \ud83d\ude00"}`)); err != nil {
		t.Errorf("an escaped backslash and a surrogate pair were refused: %v", err)
	}

	any, _ := ParseAllowList("*")
	for _, async := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(bad[2]))
		}))
		_, err := NewHTTPSteps(any, nil, nil).call(t.Context(), Step{Name: "s", URL: srv.URL, Async: async}, stepBody{}, "token")
		srv.Close()
		if pe, ok := errors.AsType[*permanent](err); !ok || !strings.Contains(pe.msg, "cannot be stored") {
			t.Errorf("async=%v: call error = %v (%T), want a permanent refusal", async, err, err)
		}
	}
}
