package hook

import (
	"errors"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
)

func TestSignAndVerify(t *testing.T) {
	t.Parallel()
	secret, body, now := []byte("0123456789abcdef"), []byte(`{"id":"e-1"}`), time.Unix(1_800_000_000, 0)
	h := Sign(secret, now, body)
	if h[:13] != "t=1800000000," {
		t.Fatalf("header = %q", h)
	}
	if err := Verify(secret, h, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatalf("a fresh signature: %v", err)
	}
	for name, tc := range map[string]struct {
		secret []byte
		header string
		body   []byte
		at     time.Time
	}{
		"changed body":   {secret, h, []byte(`{"id":"e-2"}`), now},
		"other secret":   {[]byte("another secret.."), h, body, now},
		"too old":        {secret, h, body, now.Add(6 * time.Minute)},
		"no signature":   {secret, "t=1800000000", body, now},
		"other time":     {secret, "t=1800000001" + h[12:], body, now},
		"garbled header": {secret, "v1=zz,t=x", body, now},
	} {
		if err := Verify(tc.secret, tc.header, tc.body, tc.at, 5*time.Minute); !errors.Is(err, ErrSignature) {
			t.Errorf("%s: %v; want ErrSignature", name, err)
		}
	}
	if err := Verify(secret, "t=1800000000,v1=00,"+h[13:], body, now, time.Minute); err != nil {
		t.Errorf("one good v1 among several: %v", err)
	}
}

// Without an allow-list only public addresses may be subscribed, as for
// http steps; a listed host may be, wherever it is.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	public, _ := flow.ParseAllowList("")
	listed, _ := flow.ParseAllowList("127.0.0.1:8080")
	for _, tc := range []struct {
		allow *flow.AllowList
		url   string
		code  string
	}{
		{public, "https://hooks.slack.com/services/T/B/x", ""},
		{public, "http://127.0.0.1:8080/hooks", domain.CodeAddressRefused},
		{public, "http://10.0.0.7/hooks", domain.CodeAddressRefused},
		{public, "http://localhost/hooks", domain.CodeAddressRefused},
		{public, "http://[::1]/hooks", domain.CodeAddressRefused},
		{listed, "http://127.0.0.1:8080/hooks", ""},
		{listed, "http://127.0.0.1:9090/hooks", domain.CodeAddressRefused},
		{public, "https://hooks.example.com/x#frag", domain.CodeInvalidURL},
		{public, "mailto:ops@example.com", domain.CodeInvalidURL},
	} {
		err := (&Hooks{Allow: tc.allow}).CheckURL(tc.url)
		ve, _ := errors.AsType[*domain.ValidationError](err)
		if (tc.code == "" && err != nil) || (tc.code != "" && (ve == nil || ve.Code != tc.code)) {
			t.Errorf("%s with %s: %v; want %q", tc.url, tc.allow, err, tc.code)
		}
	}
}

// The first retry comes within 10 seconds; each later wait doubles, up to
// an hour.
func TestBackoff(t *testing.T) {
	t.Parallel()
	h := &Hooks{Opts: Opts{}.withDefaults()}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second}
	for i, w := range want {
		if got := h.backoff(i + 1); got != w {
			t.Errorf("backoff(%d) = %s; want %s", i+1, got, w)
		}
	}
	if got := h.backoff(40); got != time.Hour {
		t.Errorf("backoff(40) = %s; want 1h", got)
	}
}

// A sealed secret opens under its key and for its subscription only.
func TestSealedSecrets(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	h := &Hooks{Key: key}
	sealed, err := h.seal("s-1", []byte("the secret"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.open("s-1", sealed); err != nil || string(got) != "the secret" {
		t.Fatalf("open = %q, %v", got, err)
	}
	if _, err := h.open("s-2", sealed); !errors.Is(err, errSealed) {
		t.Errorf("opened for another subscription: %v", err)
	}
	other := &Hooks{Key: append(make([]byte, 31), 1)}
	if _, err := other.open("s-1", sealed); !errors.Is(err, errSealed) {
		t.Errorf("opened under another key: %v", err)
	}
}
