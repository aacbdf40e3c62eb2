package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/url"

	"github.com/tollgatehq/tollgate/domain/mail"
)

// mailConfig is how serve sends mail.
type mailConfig struct {
	SMTPURL    string `name:"smtp-url" env:"TOLLGATE_SMTP_URL" help:"SMTP server that mail to the people who may act on a request goes through: smtp://user:password@host:587 (STARTTLS when offered) or smtps://… (TLS from the start); without it mail is written to the log."`
	SMTPFrom   string `name:"smtp-from" env:"TOLLGATE_SMTP_FROM" help:"Sender of that mail, such as \"Tollgate <tollgate@example.com>\" (required with --smtp-url)."`
	DigestHour int    `name:"digest-hour" env:"TOLLGATE_DIGEST_HOUR" default:"${defaultDigestHour}" help:"Hour of the day (0-23, UTC) when each person's daily digest of requests is sent."`
}

// sender is the mail sender c configures: SMTP, or the log.
func (c mailConfig) sender(log *slog.Logger) (mail.Sender, error) {
	if c.DigestHour < 0 || c.DigestHour > 23 {
		return nil, fmt.Errorf("--digest-hour must be 0 to 23, not %d", c.DigestHour)
	}
	if c.SMTPURL == "" {
		if c.SMTPFrom != "" {
			return nil, fmt.Errorf("--smtp-from is set but --smtp-url is not: set both to send mail")
		}
		return mail.Log{Logger: log}, nil
	}
	return newSMTP(c.SMTPURL, c.SMTPFrom)
}

// describe says, for the start-up output, where mail goes.
func (c mailConfig) describe() string {
	if c.SMTPURL == "" {
		return "Mail: no SMTP server is configured, so mail to the people who may act is written to the log; set --smtp-url and --smtp-from (TOLLGATE_SMTP_URL, TOLLGATE_SMTP_FROM) to send it"
	}
	host := c.SMTPURL
	if u, err := url.Parse(c.SMTPURL); err == nil {
		host = u.Scheme + "://" + u.Host
	}
	return "Mail: sent through " + host + " from " + c.SMTPFrom
}

func printMail(c mailConfig, stdout io.Writer) { fmt.Fprintln(stdout, c.describe()) }
