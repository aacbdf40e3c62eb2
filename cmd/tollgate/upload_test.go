package main

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"testing"
)

// person is someone signed in to a test server's web app.
type person struct {
	base string
	hc   *http.Client
}

// signIn adds a person with the given role to the server's database (with
// `tollgate user add`) and signs them in through the login form.
func (s *testServer) signIn(t *testing.T, email, role string) *person {
	t.Helper()
	if s.env == nil {
		t.Fatal("signIn needs the server's environment (testServer.env)")
	}
	env := cloneEnv(s.env)
	env["TOLLGATE_PASSWORD"] = "a long enough password"
	var out bytes.Buffer
	if err := run(t.Context(), []string{"user", "add", "--email", email, "--role", role}, envFunc(env), &out, &out); err != nil {
		t.Fatalf("user add %s: %v\n%s", email, err, out.String())
	}
	return &person{base: s.URL, hc: signInAs(t, s.URL, email, env["TOLLGATE_PASSWORD"])}
}

// upload posts one file as the upload form does and returns the status
// and body of the answer.
func (p *person) upload(t *testing.T, path, name string, content []byte) (int, string) {
	t.Helper()
	status, body, err := postFile(t.Context(), p.hc, p.base+path, name, content)
	if err != nil {
		t.Fatal(err)
	}
	return status, body
}

// postFile posts content as the one file of the upload form ("files") and
// returns the status and body of the answer.
func postFile(ctx context.Context, hc *http.Client, target, name string, content []byte) (int, string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, err := mw.CreateFormFile("files", name)
	if err != nil {
		return 0, "", err
	}
	_, _ = w.Write(content)
	_ = mw.Close()
	req, err := http.NewRequestWithContext(ctx, "POST", target, &body)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
