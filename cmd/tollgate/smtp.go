package main

import (
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/url"
	"strconv"
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
	for i, m := range out {
		if errs[i] != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			errs[i] = fmt.Errorf("send mail to %s: %w", msgs[i].To, err) // the server stops: sent again later
			continue
		}
		if err := deliver(conn, m); err != nil {
			errs[i] = fmt.Errorf("send mail to %s: %w", msgs[i].To, err)
		}
	}
	_ = c.CloseWithSMTPClient(conn) // what was accepted is delivered whatever QUIT answers
	return errs
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
	from, err := m.GetSender(false)
	if err != nil {
		return err
	}
	rcpts, err := m.GetRecipients()
	if err != nil {
		return err
	}
	if err := conn.Mail(from); err != nil {
		_ = conn.Reset()
		return err
	}
	for _, r := range rcpts {
		if err := conn.Rcpt(r); err != nil {
			_ = conn.Reset()
			return err
		}
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
