package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/domain/mail"
	"github.com/tollgatehq/tollgate/web"
)

// IssueReset has an admin's browser issue a reset link for userID and
// returns the link's path.
func issueReset(t *testing.T, admin *browser, userID, email string) string {
	t.Helper()
	p := admin.do("POST", "/admin/users/"+userID+"/reset", url.Values{})
	wantPage(t, p, http.StatusOK, "Password-reset link for "+email, "It works once, for 24 hours")
	link := between(p.Body, `<code class="secret-value">`, `</code>`)
	u, err := url.Parse(link)
	if err != nil || u.Host == "" || !strings.HasPrefix(u.Path, "/reset/") || len(u.Path) < len("/reset/")+26 {
		t.Fatalf("the reset link %q: %v", link, err)
	}
	return u.Path
}

// from is the X-Forwarded-For header of a client at addr (the servers of
// these tests trust it).
func from(addr string) []string { return []string{"X-Forwarded-For", addr} }

func setPassword(b *browser, path, password, confirm, addr string) page {
	b.t.Helper()
	return b.do("POST", path, url.Values{"new": {password}, "confirm": {confirm}}, from(addr)...)
}

// An admin issues a one-time link; it shows the account it is for, takes
// a new password under the account page's rules, ends the person's other
// sessions, signs this browser in, and works once. Issuing and using it
// are audited.
func TestUIPasswordResetLinkWorksOnce(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withLoginClock, func(t *testing.T, e *apiEnv) {
		bossID, _ := e.namedPerson(t, "boss@example.com", "Ada Admin", domain.RoleAdmin)
		revID, oldPass := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		boss := e.browser(t)
		wantPage(t, boss.loginFrom("10.0.0.1", "boss@example.com", "correct horse boss@example.com"), http.StatusSeeOther)
		elsewhere := e.browser(t)
		wantPage(t, elsewhere.loginFrom("10.0.0.2", "rev@example.com", oldPass), http.StatusSeeOther)

		wantPage(t, boss.get("/admin/users"), http.StatusOK, `data-testid="issue-reset"`)
		path := issueReset(t, boss, revID, "rev@example.com")
		b := e.browser(t)
		wantPage(t, b.do("GET", path, nil, from("10.0.0.3")...), http.StatusOK, "Choose a new password", "rev@example.com",
			`autocomplete="new-password"`, "At least 12 characters")
		wantPage(t, setPassword(b, path, "short", "short", "10.0.0.3"), http.StatusUnprocessableEntity, "Use at least 12 characters.")
		wantPage(t, setPassword(b, path, "rev@example.com", "rev@example.com", "10.0.0.3"), http.StatusUnprocessableEntity, "your email address")
		wantPage(t, setPassword(b, path, "123rev@example.com", "123rev@example.com", "10.0.0.3"), http.StatusUnprocessableEntity, "your email address")
		const fresh = "tangerine orbit lantern"
		wantPage(t, setPassword(b, path, fresh, fresh+"!", "10.0.0.3"), http.StatusUnprocessableEntity, "does not match the new password")
		wantPage(t, b.do("POST", path, url.Values{"new": {fresh}, "confirm": {fresh}}, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden)
		wantPage(t, elsewhere.get("/inbox"), http.StatusOK) // nothing changed yet

		wantPage(t, setPassword(b, path, fresh, fresh, "10.0.0.3"), http.StatusOK, "Your password is set", "You are signed in")
		wantPage(t, b.get("/inbox"), http.StatusOK, "rev@example.com")
		if p := elsewhere.get("/inbox"); p.Status != http.StatusSeeOther {
			t.Fatalf("another session survived the reset: %d", p.Status)
		}
		wantPage(t, e.browser(t).loginFrom("10.0.0.4", "rev@example.com", oldPass), http.StatusUnauthorized)
		wantPage(t, e.browser(t).loginFrom("10.0.0.4", "rev@example.com", fresh), http.StatusSeeOther)

		// Used once: the same link, again, from anyone.
		for _, who := range []*browser{b, e.browser(t)} {
			wantPage(t, who.do("GET", path, nil, from("10.0.0.5")...), http.StatusNotFound, "This link is no longer valid", "Ask an admin")
			wantPage(t, setPassword(who, path, "another long passphrase", "another long passphrase", "10.0.0.5"), http.StatusNotFound, "no longer valid")
		}
		wantPage(t, e.browser(t).loginFrom("10.0.0.4", "rev@example.com", fresh), http.StatusSeeOther)

		issued, _, _ := e.db.Audit(t.Context(), domain.AuditFilter{Action: "password.reset_issue"})
		used, _, _ := e.db.Audit(t.Context(), domain.AuditFilter{Action: "password.reset"})
		if len(issued) != 1 || issued[0].ActorID != bossID || issued[0].Subject != revID {
			t.Errorf("audit of the issue: %+v", issued)
		}
		if len(used) != 1 || used[0].ActorID != revID || !strings.Contains(string(used[0].Data), bossID) {
			t.Errorf("audit of the use: %+v", used)
		}
		wantPage(t, boss.get("/admin/audit"), http.StatusOK, "issued a password-reset link for", "chose a new password with a reset link issued by")
	})
}

// A link stops working after 24 hours, when a newer one is issued, when
// its account is disabled; an unknown token is no link at all; and a
// browser signed in as someone else is refused. Every such page says the
// same, and invalid links count per address: too many, and the address's
// next invalid link waits, while a good one still opens.
func TestUIPasswordResetLinkRefusals(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withLoginClock, func(t *testing.T, e *apiEnv) {
		clock := e.api.Clock.(*clocktest.Clock)
		boss := e.signedIn(t, "boss@example.com", domain.RoleAdmin)
		revID, _ := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		founderID, _ := e.addPerson(t, "founder@example.com", domain.RoleFounder)
		anon := e.browser(t)
		invalid := func(path, addr string) {
			t.Helper()
			wantPage(t, anon.do("GET", path, nil, from(addr)...), http.StatusNotFound, "This link is no longer valid")
		}

		// Only admins issue links.
		rev := e.signedIn(t, "other.rev@example.com", domain.RoleReviewer)
		wantPage(t, rev.do("POST", "/admin/users/"+founderID+"/reset", url.Values{}), http.StatusForbidden)
		wantPage(t, e.signedIn(t, "f2@example.com", domain.RoleFounder).do("POST", "/admin/users/"+founderID+"/reset", url.Values{}), http.StatusForbidden)
		wantPage(t, boss.do("POST", "/admin/users/nobody/reset", url.Values{}), http.StatusNotFound, "no longer exists")

		// Replaced by a newer link.
		older := issueReset(t, boss, revID, "rev@example.com")
		newer := issueReset(t, boss, revID, "rev@example.com")
		invalid(older, "192.0.2.2")
		wantPage(t, anon.do("GET", newer, nil, from("192.0.2.2")...), http.StatusOK, "rev@example.com")

		// Another person's link, in a browser signed in as someone else:
		// refused, and their password stays.
		founderLink := issueReset(t, boss, founderID, "founder@example.com")
		wantPage(t, rev.do("GET", founderLink, nil, from("192.0.2.3")...), http.StatusConflict, "for another account", "other.rev@example.com")
		wantPage(t, setPassword(rev, founderLink, "tangerine orbit lantern", "tangerine orbit lantern", "192.0.2.3"), http.StatusConflict)
		wantPage(t, rev.get("/inbox"), http.StatusOK, "other.rev@example.com")
		wantPage(t, e.browser(t).loginFrom("192.0.2.9", "founder@example.com", "correct horse founder@example.com"), http.StatusSeeOther)
		wantPage(t, anon.do("GET", founderLink, nil, from("192.0.2.3")...), http.StatusOK, "founder@example.com") // still unused

		// Disabled account: its link stops working, and it gets no new one.
		wantPage(t, boss.do("POST", "/admin/users/"+founderID, url.Values{"role": {"founder"}, "disabled": {"true"}}), http.StatusOK)
		invalid(founderLink, "192.0.2.4")
		wantPage(t, boss.do("POST", "/admin/users/"+founderID+"/reset", url.Values{}), http.StatusUnprocessableEntity, "is disabled")

		// Unknown, and too long to be a token.
		invalid("/reset/AAAAAAAAAAAAAAAAAAAAAAAAAA", "192.0.2.5")
		invalid("/reset/"+strings.Repeat("A", 100), "192.0.2.5")

		// Twenty invalid links from one address, and its next invalid one
		// waits; a good link does not, nor do other addresses.
		for i := range 18 {
			invalid(fmt.Sprintf("/reset/guess%d", i), "192.0.2.5")
		}
		p := anon.do("GET", "/reset/guess-more", nil, from("192.0.2.5")...)
		wantPage(t, p, http.StatusTooManyRequests, "Too many invalid links")
		if p.Header.Get("Retry-After") == "" {
			t.Error("no Retry-After on a throttled link")
		}
		wantPage(t, anon.do("GET", newer, nil, from("192.0.2.5")...), http.StatusOK, "rev@example.com")
		invalid("/reset/guess-more", "192.0.2.6")
		clock.Advance(15*time.Minute + time.Second)
		invalid("/reset/guess-more", "192.0.2.5")

		// Expired (sessions are signed out after so long; the link is not
		// about sessions).
		expiring := issueReset(t, boss, revID, "rev@example.com")
		clock.Advance(domain.PasswordResetTTL - time.Second)
		wantPage(t, anon.do("GET", expiring, nil, from("192.0.2.1")...), http.StatusOK, "Choose a new password")
		clock.Advance(2 * time.Second)
		invalid(expiring, "192.0.2.1")
	})
}

// Anyone may ask for a person's link by mail: that must not void the
// link an admin issued them, which still works once the mailed one has
// gone out.
func TestUIForgotPasswordKeepsTheAdminsLink(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withResetMail, func(t *testing.T, e *apiEnv) {
		mails := e.mailResets(t, 10*time.Millisecond)
		boss := e.signedIn(t, "boss@example.com", domain.RoleAdmin)
		revID, _ := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		path := issueReset(t, boss, revID, "rev@example.com")
		anon := e.browser(t)
		wantPage(t, anon.do("POST", "/forgot", url.Values{"email": {"rev@example.com"}}, from("203.0.113.1")...), http.StatusOK)
		eventually(t, "the mailed link", func() bool { return len(mails.sent("rev@example.com")) == 1 })
		mailed := strings.TrimPrefix(mails.sent("rev@example.com")[0], publicURL)
		wantPage(t, anon.do("GET", mailed, nil, from("203.0.113.2")...), http.StatusOK, "Choose a new password", "rev@example.com")
		const fresh = "tangerine orbit lantern"
		wantPage(t, setPassword(e.browser(t), path, fresh, fresh, "203.0.113.3"), http.StatusOK, "Your password is set")
	})
}

// resetMails is the mail server of tests that mail reset links: it
// records the links mailed, by recipient.
type resetMails struct {
	mu    sync.Mutex
	links map[string][]string // by email
}

func (m *resetMails) Send(_ context.Context, msgs []mail.Message) []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, msg := range msgs {
		m.links[msg.To] = append(m.links[msg.To], msg.Link)
	}
	return make([]error, len(msgs))
}

func (m *resetMails) sent(email string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.links[email]...)
}

// publicURL is where the servers of tests that mail links say they are.
const publicURL = "https://tollgate.example.com"

// withResetOutbox has s queue requests for reset links in the durable
// mail outbox, as serve does, and build links on publicURL.
func withResetOutbox(s *web.Server) {
	s.ResetMailer = mail.ResetLinks{Mailer: mail.Outbox{Store: s.Store.(mail.Store), Clock: s.Clock}}
	s.PublicURL = publicURL + "/"
}

// withResetMail enables the browser app with a fake clock, trusted
// forwarded addresses and requests for reset links by mail (see
// apiEnv.mailResets).
func withResetMail(s *web.Server) {
	withLoginClock(s)
	withResetOutbox(s)
}

// mailResets runs a mail dispatcher, as serve does, polling every poll
// until the test ends: it issues the links that reset requests ask for
// and mails them to the recorder it returns.
func (e *apiEnv) mailResets(t *testing.T, poll time.Duration) *resetMails {
	t.Helper()
	m := &resetMails{links: map[string][]string{}}
	d := mail.New(mail.Opts{Store: e.db, Sender: m, Log: testLogger(t), Clock: e.api.Clock, PublicURL: e.api.PublicURL, Poll: poll,
		Resets: e.db})
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return m
}

// Without a mailer, or without a public URL to build mailed links on (a
// request's Host header is the asker's to choose), the login page offers
// no link by mail and /forgot is not there.
func TestUIForgotPasswordNeedsMail(t *testing.T) {
	t.Parallel()
	noPublicURL := func(s *web.Server) { withResetMail(s); s.PublicURL = "" }
	forEachDialectWith(t, noPublicURL, func(t *testing.T, e *apiEnv) {
		b := e.browser(t)
		p := b.get("/login")
		wantPage(t, p, http.StatusOK, "Ask an admin for a reset link")
		if strings.Contains(p.Body, `href="/forgot"`) {
			t.Error("the login page offers mail without a mailer")
		}
		wantPage(t, b.get("/forgot"), http.StatusNotFound)
		wantPage(t, b.do("POST", "/forgot", url.Values{"email": {adminEmail}}), http.StatusNotFound)
		mails := e.mailResets(t, 10*time.Millisecond)
		time.Sleep(100 * time.Millisecond) // several polls
		if got := mails.sent(adminEmail); len(got) != 0 {
			t.Fatalf("mailed without a public URL: %v", got)
		}
	})
}

// With a mailer, "Forgot password?" mails a link to an enabled account's
// email; the answer is the same, word for word, for an unknown or disabled
// account, which gets no mail. Requests count per email and per address.
func TestUIForgotPasswordMailsALink(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withResetMail, func(t *testing.T, e *apiEnv) {
		mails := e.mailResets(t, 10*time.Millisecond)
		clock := e.api.Clock.(*clocktest.Clock)
		e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		offID, _ := e.addPerson(t, "off@example.com", domain.RoleReviewer)
		if _, _, err := e.db.UpdateUser(t.Context(), offID, domain.UserChange{Role: new(domain.RoleReviewer), Disabled: new(true)}, time.Now()); err != nil {
			t.Fatal(err)
		}
		b := e.browser(t)
		wantPage(t, b.get("/login"), http.StatusOK, `<a href="/forgot">Forgot password?</a>`)
		wantPage(t, b.get("/forgot"), http.StatusOK, "Forgot your password?", `name="email"`)
		ask := func(email, addr string) page {
			t.Helper()
			return b.do("POST", "/forgot", url.Values{"email": {email}}, from(addr)...)
		}

		known := ask("Rev@Example.com", "198.51.100.1")
		wantPage(t, known, http.StatusOK, "If an account exists for that email, we have sent a link")
		for _, email := range []string{"nobody@example.com", "off@example.com"} {
			other := ask(email, "198.51.100.1")
			if other.Status != known.Status || other.Body != known.Body {
				t.Errorf("the answer for %s differs from a known account's:\n%s\n---\n%s", email, other.Body, known.Body)
			}
		}
		// The mail dispatcher sends the mail after the answer: wait for it.
		eventually(t, "the mail to rev", func() bool { return len(mails.sent("rev@example.com")) == 1 })
		links := mails.sent("rev@example.com")
		if len(links) != 1 || !strings.HasPrefix(links[0], publicURL+"/reset/") {
			t.Fatalf("links mailed to rev: %v", links)
		}
		path := strings.TrimPrefix(links[0], publicURL)
		wantPage(t, b.do("GET", path, nil, from("198.51.100.2")...), http.StatusOK, "Choose a new password", "rev@example.com")
		const fresh = "tangerine orbit lantern"
		wantPage(t, setPassword(b, path, fresh, fresh, "198.51.100.2"), http.StatusOK, "Your password is set")
		wantPage(t, b.do("POST", "/logout", url.Values{}), http.StatusSeeOther)
		wantPage(t, ask("not an email", "198.51.100.1"), http.StatusUnprocessableEntity, `id="forgot-email-error"`, "Enter the email address of your account")

		// Per email: five requests in the window, wherever they come from.
		for i := range 4 {
			wantPage(t, ask("rev@example.com", fmt.Sprintf("198.51.100.%d", 10+i)), http.StatusOK)
		}
		p := ask("rev@example.com", "198.51.100.20")
		wantPage(t, p, http.StatusTooManyRequests, "Wait a few minutes")
		if p.Header.Get("Retry-After") == "" {
			t.Error("no Retry-After on a throttled request")
		}
		eventually(t, "five links mailed to rev", func() bool { return len(mails.sent("rev@example.com")) == 5 })
		// Mail goes out oldest first: the earlier requests are served.
		for _, email := range []string{"nobody@example.com", "off@example.com"} {
			if got := mails.sent(email); len(got) != 0 {
				t.Errorf("%s got a link: %v", email, got)
			}
		}
		// Per address: twenty, whatever the emails.
		for i := range 20 {
			wantPage(t, ask(fmt.Sprintf("u%d@example.com", i), "198.51.100.99"), http.StatusOK)
		}
		wantPage(t, ask("u99@example.com", "198.51.100.99"), http.StatusTooManyRequests)
		clock.Advance(15*time.Minute + time.Second)
		wantPage(t, ask("u99@example.com", "198.51.100.99"), http.StatusOK)

		// Every request answered is audited: 3 + 4 + 20 + 1.
		eventually(t, "every request audited", func() bool {
			requests, _, _ := e.db.Audit(t.Context(), domain.AuditFilter{Action: "password.reset_request", Limit: 500})
			return len(requests) == 28
		})
	})
}
