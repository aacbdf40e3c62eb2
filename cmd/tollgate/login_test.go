package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

// sessionClient is a browser's cookie jar without its redirects: each
// answer is seen as the server gave it. transport may be nil.
func sessionClient(transport http.RoundTripper) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Transport: transport, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// postLogin posts the login form at base as hc, and answers its status:
// 303 when the person is signed in, with the session's cookie in hc's jar.
func postLogin(ctx context.Context, hc *http.Client, base, email, password string) (int, error) {
	form := url.Values{"email": {email}, "password": {password}, "next": {"/"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/login", strings.NewReader(form))
	if err != nil {
		return 0, err
	}
	// No Origin: a client that is not a browser sends none, which the
	// cross-origin check lets through (a chaos test's base is not the host
	// its transport dials).
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// signInAs signs in through the login form and returns a client that
// holds the session's cookie.
func signInAs(t testing.TB, base, email, password string) *http.Client {
	t.Helper()
	hc := sessionClient(nil)
	if status, err := postLogin(t.Context(), hc, base, email, password); err != nil || status != http.StatusSeeOther {
		t.Fatalf("sign in as %s: %d %v", email, status, err)
	}
	return hc
}

// signInRetrying signs in like signInAs, trying again while the server
// reached is down (unreachable, or answering 5xx), until ctx ends.
func signInRetrying(ctx context.Context, transport http.RoundTripper, base, email, password string) (*http.Client, error) {
	hc := sessionClient(transport)
	hc.Timeout = 10 * time.Second
	for ctx.Err() == nil {
		status, err := postLogin(ctx, hc, base, email, password)
		switch {
		case err != nil || status >= 500:
			time.Sleep(20 * time.Millisecond)
		case status == http.StatusSeeOther:
			return hc, nil
		default:
			return nil, fmt.Errorf("sign in as %s: %d", email, status)
		}
	}
	return nil, ctx.Err()
}
