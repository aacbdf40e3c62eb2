package main

import (
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/mail"
)

// withButtons makes e's dispatcher give approvals' mail its Approve and
// Reject buttons, as serve does with SMTP.
func (e *env) withButtons(t *testing.T) {
	e.d = mail.New(mail.Opts{Store: e.db, Sender: testSender(t, e.smtp.URL), Log: slog.New(slog.DiscardHandler), Clock: e.clock,
		PublicURL: publicURL, RetryBase: time.Minute, DigestHour: mail.DefaultDigestHour, Links: e.db})
}

var buttonLine = regexp.MustCompile(`(?m)^  (Approve|Reject): (` + regexp.QuoteMeta(publicURL) + `/links/([A-Za-z0-9_-]+)\?choice=(approve|reject))\r?$`)

// buttonsOf returns the token behind a mail's buttons, checking that both
// are there, in both parts, on one link; "" for a mail without them.
func buttonsOf(t *testing.T, m receivedMail) string {
	t.Helper()
	found := buttonLine.FindAllStringSubmatch(m.Text, -1)
	if len(found) == 0 {
		if strings.Contains(m.HTML, "/links/") {
			t.Errorf("the HTML part to %v has buttons the text part lacks:\n%s", m.To, m.Text)
		}
		return ""
	}
	if len(found) != 2 || found[0][1] != "Approve" || found[0][4] != "approve" || found[1][1] != "Reject" || found[1][4] != "reject" || found[0][3] != found[1][3] {
		t.Fatalf("the buttons to %v are not Approve then Reject on one link: %q", m.To, found)
	}
	for _, f := range found {
		if !strings.Contains(m.HTML, `href="`+f[2]+`"`) {
			t.Errorf("the HTML part to %v lacks %s:\n%s", m.To, f[2], m.HTML)
		}
	}
	return found[0][3]
}

// An approval's mail to each person who may decide it carries Approve and
// Reject buttons: one link of their own, for them, for a week; reminders
// carry fresh ones. A person barred from deciding (they started the run)
// and a request that is not an approval get the request's link alone.
func TestMailButtonsDecideApprovals(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		e.withButtons(t)
		e.addUser(t, "x@example.com", domain.RoleReviewer, false, domain.MailImmediately)
		e.addUser(t, "y@example.com", domain.RoleAdmin, false, domain.MailImmediately)
		e.addUser(t, "ada@example.com", domain.RoleFounder, false, "")

		s := e.ask(t, request{Approvers: []string{"x@example.com", "y@example.com"}, Title: "Expense: Hotel", Quorum: 2,
			Ladder: []domain.Rung{{AfterMs: 300, Remind: true}}})
		e.round(t)
		ms := wantMails(t, e.smtp, "x@example.com", "y@example.com")
		tokens := map[string]string{}
		for _, m := range ms {
			tokens[m.To[0]] = buttonsOf(t, m)
		}
		if tokens["x@example.com"] == "" || tokens["y@example.com"] == "" || tokens["x@example.com"] == tokens["y@example.com"] {
			t.Fatalf("each person's mail must carry buttons of their own: %v", tokens)
		}
		links, err := e.db.Links(t.Context(), s.ID)
		if err != nil || len(links) != 2 {
			t.Fatalf("links of the request: %+v (%v), want one a person", links, err)
		}
		for _, l := range links {
			if l.Origin != domain.LinkFromMail || l.CreatedBy != l.Email || !l.ExpiresAt.Equal(l.CreatedAt.Add(domain.DefaultLinkTTL)) {
				t.Errorf("a mail's link is %+v; want one of the mail's, for its person, for a week", l)
			}
			byToken, err := e.db.LinkByToken(t.Context(), domain.HashLinkToken(tokens[l.Email]))
			if err != nil || byToken.ID != l.ID {
				t.Errorf("the token mailed to %s opens %+v (%v), want link %s", l.Email, byToken, err, l.ID)
			}
		}

		// x votes on the page; the ladder's reminder carries new buttons to
		// y, and none to x, whose vote counts already.
		x := domain.User{ID: e.users["x@example.com"], Email: "x@example.com", Role: domain.RoleReviewer}
		if _, err := e.eng.Decide(t.Context(), domain.ResumeRequest{SuspensionID: s.ID, By: x.Email, Actor: &x, Channel: domain.ChannelWeb}, true, ""); err != nil {
			t.Fatal(err)
		}
		e.clock.Set(e.clock.Now().Add(300 * time.Millisecond))
		deadline := time.Now().Add(10 * time.Second)
		for len(e.smtp.Messages()) < 4 && time.Now().Before(deadline) {
			e.round(t)
			time.Sleep(20 * time.Millisecond)
		}
		ms = wantMails(t, e.smtp, "x@example.com", "y@example.com", "x@example.com", "y@example.com")
		for _, m := range ms[2:] {
			fresh := buttonsOf(t, m)
			if m.To[0] == "x@example.com" && fresh != "" {
				t.Error("the reminder to a person whose vote counts carries buttons")
			}
			if m.To[0] == "y@example.com" && (fresh == "" || fresh == tokens["y@example.com"]) {
				t.Errorf("the reminder to y carries buttons %q; want new ones", fresh)
			}
		}

		// An input asks for more than a click: its mail links to its page.
		e.ask(t, request{Kind: domain.KindInput, Assignee: "ada@example.com", Title: "Expense: Receipts"})
		e.round(t)
		ms = e.smtp.Messages()
		if got := buttonsOf(t, ms[len(ms)-1]); got != "" {
			t.Errorf("an input's mail carries decision buttons")
		}

		// Who started the run may not decide it: their mail has no buttons;
		// the other approver's has.
		in, _ := json.Marshal(request{Kind: domain.KindApproval, Approvers: []string{"x@example.com", "y@example.com"}, Title: "Expense: Taxi"})
		if _, _, err := e.eng.StartAs(t.Context(), domain.Starter{ID: e.users["x@example.com"], Email: "x@example.com", Role: domain.RoleReviewer}, "request", in, ""); err != nil {
			t.Fatal(err)
		}
		deadline = time.Now().Add(10 * time.Second)
		for len(e.smtp.Messages()) < 7 && time.Now().Before(deadline) {
			e.round(t)
			time.Sleep(20 * time.Millisecond)
		}
		ms = e.smtp.Messages()
		if len(ms) != 7 {
			t.Fatalf("%d mails, want 7", len(ms))
		}
		for _, m := range ms[5:] {
			got := buttonsOf(t, m)
			if m.To[0] == "x@example.com" && got != "" {
				t.Error("the person who started the run got buttons to decide it")
			}
			if m.To[0] == "y@example.com" && got == "" {
				t.Error("the other approver got no buttons")
			}
		}
	})
}
