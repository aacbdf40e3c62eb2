package main

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// A server killed with SIGKILL after a suspension committed and while its
// mail was being sent (the SMTP server holds the DATA unanswered) sends it
// after the restart, once: again after a further restart nothing more
// arrives.
func TestMailCrashBetweenCommitAndSendSQLite(t *testing.T) {
	mailCrashTest(t, nil)
}

func TestMailCrashBetweenCommitAndSendPostgres(t *testing.T) {
	mailCrashTest(t, map[string]string{"DATABASE_URL": storagetest.NewDatabase(t)})
}

func mailCrashTest(t *testing.T, extraEnv map[string]string) {
	t.Parallel()
	smtp := startSMTPServer(t)
	smtp.Hold()
	env := map[string]string{"TOLLGATE_SMTP_URL": smtp.URL, "TOLLGATE_SMTP_FROM": "Tollgate <tollgate@example.com>",
		"TOLLGATE_ADMIN_EMAIL": "boss@example.com", "TOLLGATE_PUBLIC_URL": "https://tollgate.example.com"}
	for k, v := range extraEnv {
		env[k] = v
	}
	h := newCrashHarness(t, env)
	p, err := h.startReady()
	if err != nil {
		t.Fatal(err)
	}
	run := h.client(1).startRun(t, "claim-verification", map[string]string{
		"claimId": "c-1", "claimText": "Revenue grew 300% in 2025", "founderEmail": "boss@example.com"})
	select {
	case <-smtp.Holding():
	case <-time.After(30 * time.Second):
		t.Fatalf("no mail was being sent within 30s\n%s", tail(p.stderr, 20))
	}
	h.kill(p)
	smtp.Release()
	if n := len(smtp.Messages()); n != 0 {
		t.Fatalf("%d mails arrived before the kill", n)
	}

	p, err = h.startReady()
	if err != nil {
		t.Fatal(err)
	}
	m := smtp.Wait(t, 1, 30*time.Second)[0]
	if len(m.To) != 1 || m.To[0] != "boss@example.com" || !strings.Contains(m.Text, "https://tollgate.example.com/suspensions/") {
		t.Fatalf("mail to %v:\n%s", m.To, m.Text)
	}
	time.Sleep(3 * time.Second) // several leases and polls
	h.stopGracefully(p)
	if p, err = h.startReady(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	h.stopGracefully(p)
	if n := len(smtp.Messages()); n != 1 {
		t.Fatalf("%d mails for run %s, want exactly 1", n, run.ID)
	}
}

// Mail flags are checked at start; without SMTP the start-up output says
// where mail goes and how to send it instead.
func TestServeMailFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--smtp-url", "smtp://mail.example.com"}, "--smtp-from must be an address"},
		{[]string{"--smtp-from", "tollgate@example.com"}, "--smtp-url is not"},
		{[]string{"--smtp-url", "http://mail.example.com", "--smtp-from", "tollgate@example.com"}, "must start with smtp:// or smtps://"},
		{[]string{"--smtp-url", "smtp://mail.example.com:99999", "--smtp-from", "tollgate@example.com"}, "is not a port"},
		{[]string{"--digest-hour", "24"}, "--digest-hour must be 0 to 23"},
	} {
		cfg, err := parseServe(c.args, func(string) string { return "" }, nil)
		if err == nil {
			_, err = cfg.sender(nil)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	cfg, err := parseServe(nil, func(k string) string {
		return map[string]string{"TOLLGATE_SMTP_URL": "smtps://u:secret@mail.example.com", "TOLLGATE_SMTP_FROM": "t@example.com"}[k]
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.sender(nil); err != nil {
		t.Fatal(err)
	}
	if got := cfg.describe(); got != "Mail: sent through smtps://mail.example.com from t@example.com" {
		t.Errorf("describe = %q (it must not show the password)", got)
	}
	if got := (mailConfig{}).describe(); !strings.Contains(got, "written to the log") || !strings.Contains(got, "TOLLGATE_SMTP_URL") {
		t.Errorf("describe without SMTP = %q", got)
	}
}

// With SMTP configured, the login page offers "Forgot password?", and
// asking for a link mails one, its subject beginning with the server's
// organisation, that opens the page to choose a new password; an unknown
// email gets the same answer and no mail. Without
// SMTP the page offers no link, since a mail written to the log would put
// a working link there.
func TestForgotPasswordMailsAResetLink(t *testing.T) {
	t.Parallel()
	const public = "https://tollgate.example.com"
	plain := startServer(t, map[string]string{"TOLLGATE_ADMIN_EMAIL": "boss@example.com"}, "--public-url", public)
	if body := getPage(t, plain.URL+"/login"); strings.Contains(body, `href="/forgot"`) {
		t.Fatal("without SMTP the login page offers a mailed reset link")
	}

	smtp := startSMTPServer(t)
	s := startServer(t, map[string]string{"TOLLGATE_ADMIN_EMAIL": "boss@example.com",
		"TOLLGATE_SMTP_URL": smtp.URL, "TOLLGATE_SMTP_FROM": "Tollgate <tollgate@example.com>"}, "--public-url", public, "--organisation", "Acme Ltd")
	if body := getPage(t, s.URL+"/login"); !strings.Contains(body, `href="/forgot"`) {
		t.Fatal("with SMTP the login page offers no reset link by mail")
	}
	var answers []string
	for _, email := range []string{"nobody@example.com", "boss@example.com"} {
		res, err := http.PostForm(s.URL+"/forgot", url.Values{"email": {email}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("POST /forgot for %s: %d\n%s", email, res.StatusCode, b)
		}
		answers = append(answers, string(b))
	}
	if answers[0] != answers[1] {
		t.Error("the answer tells whether an account exists")
	}
	m := smtp.Wait(t, 1, 30*time.Second)[0]
	if len(m.To) != 1 || m.To[0] != "boss@example.com" || m.Header.Get("Subject") != "[Acme Ltd] Reset your Tollgate password" {
		t.Fatalf("mail to %v, subject %q", m.To, m.Header.Get("Subject"))
	}
	link := regexp.MustCompile(regexp.QuoteMeta(public) + `/reset/[A-Za-z0-9]+`).FindString(m.Text)
	if link == "" || !strings.Contains(m.HTML, link) {
		t.Fatalf("no reset link in the mail:\n%s", m.Text)
	}
	if body := getPage(t, s.URL+strings.TrimPrefix(link, public)); !strings.Contains(body, "boss@example.com") {
		t.Fatalf("the mailed link does not open the reset page for its account:\n%s", body)
	}
	time.Sleep(2 * time.Second) // several polls: an unknown email is never mailed
	if n := len(smtp.Messages()); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}
	if m := string(s.client().call(t, http.StatusOK, "GET", "/metrics", nil).Body); !strings.Contains(m, `tollgate_notifications_total{channel="mail",outcome="sent"} 1`+"\n") {
		t.Errorf("/metrics does not count the mail sent:\n%s", m)
	}
}

func getPage(t *testing.T, u string) string {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", u, res.StatusCode, b)
	}
	return string(b)
}
