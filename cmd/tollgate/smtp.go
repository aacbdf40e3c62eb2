package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/tollgatehq/tollgate/domain/mail"
	"github.com/wneessen/go-mail/smtp"
)

// smtpSender sends through an SMTP server with go-mail.
type smtpSender struct {
	host string
	from string
	opts []gomail.Option
}

// smtpTimeout bounds connecting, and then each message's commands.
const smtpTimeout = 30 * time.Second

// newSMTP is a sender for the server rawURL names, smtp://user:pass@host:port
// (STARTTLS when the server offers it; port 587 by default) or
// smtps://… (TLS from the start; port 465 by default), with From set to
// from.
func newSMTP(rawURL, from string) (*smtpSender, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("--smtp-url is not a URL such as smtp://user:password@mail.example.com:587")
	}
	if _, err := netmail.ParseAddress(from); err != nil {
		return nil, fmt.Errorf("--smtp-from must be an address such as \"Tollgate <tollgate@example.com>\", not %q", from)
	}
	s := &smtpSender{host: u.Hostname(), from: from, opts: []gomail.Option{gomail.WithTimeout(smtpTimeout)}}
	if s.host == "" {
		return nil, errors.New("--smtp-url names no host: smtp://user:password@mail.example.com:587")
	}
	port := 587
	switch u.Scheme {
	case "smtp":
		s.opts = append(s.opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case "smtps":
		port = 465
		s.opts = append(s.opts, gomail.WithSSL())
	default:
		return nil, fmt.Errorf("--smtp-url must start with smtp:// or smtps://, not %s://", u.Scheme)
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("--smtp-url: %q is not a port", p)
		}
	}
	s.opts = append(s.opts, gomail.WithPort(port))
	if u.User != nil {
		pass, _ := u.User.Password()
		s.opts = append(s.opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(u.User.Username()), gomail.WithPassword(pass))
	}
	return s, nil
}

// Send delivers msgs through one connection: each a multipart/alternative
// mail with its plain-text and HTML parts, Message-ID, Date and
// List-Unsubscribe. A failed connection fails them all; otherwise each
// message succeeds or fails on its own.
func (s *smtpSender) Send(ctx context.Context, msgs []mail.Message) []error {
	errs := make([]error, len(msgs))
	out := make([]*gomail.Msg, len(msgs))
	ready := 0
	for i, m := range msgs {
		out[i], errs[i] = s.message(m)
		if errs[i] == nil {
			ready++
		}
	}
	if ready == 0 {
		return errs
	}
	c, err := gomail.NewClient(s.host, s.opts...)
	var conn *smtp.Client
	if err == nil {
		conn, err = c.DialToSMTPClientWithContext(ctx)
	}
	if err != nil {
		for i := range out {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("connect to SMTP server %s: %w", s.host, err)
			}
		}
		return errs
	}
	if ok, _ := conn.Extension("PIPELINING"); ok {
		pipeline(ctx, conn, out, errs)
	} else {
		for i, m := range out {
			if errs[i] == nil {
				errs[i] = ctx.Err() // a server that stops leaves the rest to be sent later
			}
			if errs[i] == nil {
				errs[i] = deliver(conn, m)
			}
		}
	}
	for i := range errs {
		if errs[i] != nil && out[i] != nil {
			errs[i] = fmt.Errorf("send mail to %s: %w", msgs[i].To, errs[i])
		}
	}
	_ = c.CloseWithSMTPClient(conn) // what was accepted is delivered whatever QUIT answers
	return errs
}

// pipeline sends msgs (each to one recipient; nil ones are skipped) with
// PIPELINING (RFC 2920): a message's content, its end and the next
// message's MAIL, RCPT and DATA go out together, and their replies are
// read together, so a message costs one round trip where the commands
// one by one cost four. That is what makes a relay across a network
// slow. A refused message fails alone (RSET ends its transaction in the
// next group); a broken connection fails every message not yet accepted.
func pipeline(ctx context.Context, conn *smtp.Client, msgs []*gomail.Msg, errs []error) {
	t := conn.Text
	params := mailParams(conn)
	content := -1                   // the message whose content goes next, after its DATA was accepted
	open := false                   // a refused message left a transaction to reset
	done := make([]bool, len(msgs)) // what became of the message is known
	var broken error
	for i := 0; i <= len(msgs) && broken == nil; i++ {
		next := i < len(msgs) && msgs[i] != nil && errs[i] == nil
		var from, to string
		if next {
			if errs[i] = ctx.Err(); errs[i] == nil {
				from, to, errs[i] = envelope(msgs[i])
			}
			next = errs[i] == nil
		}
		if i < len(msgs) && !next {
			done[i] = true
		}
		if content < 0 && !next {
			continue
		}
		if broken = conn.UpdateDeadline(smtpTimeout); broken != nil {
			break
		}
		if content >= 0 {
			w := t.DotWriter()
			if _, broken = msgs[content].WriteTo(w); broken == nil {
				broken = w.Close()
			}
		}
		if next && broken == nil {
			if open {
				fmt.Fprint(t.W, "RSET\r\n")
			}
			fmt.Fprintf(t.W, "MAIL FROM:%s%s\r\nRCPT TO:%s\r\nDATA\r\n", from, params, to)
			broken = t.W.Flush()
		}
		if content >= 0 && broken == nil {
			errs[content], broken = reply(t, 250)
			done[content] = broken == nil
			content = -1
		}
		if !next || broken != nil {
			continue
		}
		if open {
			if _, broken = reply(t, 250); broken != nil {
				continue
			}
			open = false
		}
		var refused [3]error
		for k, code := range []int{250, 25, 354} {
			if refused[k], broken = reply(t, code); broken != nil {
				break
			}
		}
		switch {
		case broken != nil:
		case refused[2] == nil && (refused[0] != nil || refused[1] != nil):
			// DATA accepted with no one to deliver to breaks RFC 2920;
			// an empty message ends it.
			fmt.Fprint(t.W, ".\r\n")
			if broken = t.W.Flush(); broken == nil {
				_, broken = reply(t, 0)
			}
			errs[i], done[i] = cmp.Or(refused[0], refused[1]), broken == nil
		case refused[2] == nil:
			content = i
		default:
			errs[i], done[i] = cmp.Or(refused[0], refused[1], refused[2]), true
			open = refused[0] == nil
		}
	}
	if broken == nil {
		return
	}
	for i, m := range msgs {
		if m != nil && !done[i] {
			errs[i] = broken
		}
	}
}

// mailParams are the parameters go-mail's Client.Mail gives MAIL on conn,
// which deliver sends, so that a pipelined message is announced the same:
// BODY=8BITMIME and SMTPUTF8 when the server offers them. (Client.Mail
// adds RET only for delivery status notifications, which are never asked
// for.)
func mailParams(conn *smtp.Client) string {
	params := ""
	if ok, _ := conn.Extension("8BITMIME"); ok {
		params += " BODY=8BITMIME"
	}
	if ok, _ := conn.Extension("SMTPUTF8"); ok {
		params += " SMTPUTF8"
	}
	return params
}

// envelope is m's sender and its one recipient, as MAIL and RCPT take
// them.
func envelope(m *gomail.Msg) (from, to string, err error) {
	if from, err = m.GetSender(false); err != nil {
		return "", "", err
	}
	rcpts, err := m.GetRecipients()
	if err != nil {
		return "", "", err
	}
	if len(rcpts) != 1 {
		return "", "", fmt.Errorf("a message to %d recipients, where one is sent at a time", len(rcpts))
	}
	for _, line := range []string{from, rcpts[0]} {
		if strings.ContainsAny(line, "\r\n") {
			return "", "", fmt.Errorf("address %q spans lines", line)
		}
	}
	return from, rcpts[0], nil
}

// reply reads one reply: a refusal (a code other than want, 0 for any)
// is the first error, a connection that failed the second.
func reply(t *textproto.Conn, want int) (refused, broken error) {
	_, _, err := t.ReadResponse(want)
	if _, ok := errors.AsType[*textproto.Error](err); ok {
		return err, nil
	}
	return nil, err
}

// deliver sends m over conn: MAIL, RCPT and DATA. A refused MAIL or RCPT
// is followed by RSET, so that the connection serves the next message.
// After an accepted DATA the mail transaction is over (RFC 5321,
// 4.1.1.4), so no RSET follows it, unlike go-mail's own send: one round
// trip less a message.
func deliver(conn *smtp.Client, m *gomail.Msg) error {
	if err := conn.UpdateDeadline(smtpTimeout); err != nil {
		return err
	}
	from, to, err := envelope(m)
	if err != nil {
		return err
	}
	if err := conn.Mail(from); err != nil {
		_ = conn.Reset()
		return err
	}
	if err := conn.Rcpt(to); err != nil {
		_ = conn.Reset()
		return err
	}
	w, err := conn.Data()
	if err != nil {
		return err
	}
	if _, err := m.WriteTo(w); err != nil {
		return err
	}
	return w.Close()
}

// message is m as go-mail builds it.
func (s *smtpSender) message(m mail.Message) (*gomail.Msg, error) {
	msg := gomail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return nil, fmt.Errorf("mail from %s: %w", s.from, err)
	}
	if err := msg.To(m.To); err != nil {
		return nil, fmt.Errorf("mail to %s: %w", m.To, err)
	}
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(m.MessageID)
	msg.SetDateWithValue(m.Date)
	if m.Unsubscribe != "" {
		msg.SetListUnsubscribe(m.Unsubscribe)
	}
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	}
	return msg, nil
}
