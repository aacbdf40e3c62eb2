package mail

import (
	"bytes"
	"context"
	"errors"
	htmltemplate "html/template"
	"strconv"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// ResetLinks takes the requests for password-reset links that people make
// on the login page, through the durable outbox.
type ResetLinks struct{ Mailer domain.Mailer }

// RequestPasswordReset queues a request for a password-reset link for the
// account of email, which the dispatcher serves (see Dispatcher.reset).
// The request is the same one small insert whether or not there is such
// an account: all that depends on the account happens later, away from
// the request that asked.
func (r ResetLinks) RequestPasswordReset(ctx context.Context, email string) error {
	return r.Mailer.Queue(ctx, domain.MailMessage{To: email, Subject: resetSubject, Reset: true})
}

const resetSubject = "Reset your Tollgate password"

// compose writes the mail of job, at now: a reset request's after issuing
// its link, any other by the composer alone.
func (d *Dispatcher) compose(ctx context.Context, job domain.MailJob, now time.Time) (Message, bool, error) {
	if job.Message != nil && job.Message.Reset {
		return d.reset(ctx, job, now)
	}
	btn, err := d.buttons(ctx, job, now)
	if err != nil {
		return Message{}, false, err
	}
	return d.c.compose(job, now, btn)
}

// reset issues a password-reset link for the enabled account storage found
// for a reset request's address (job.To) and writes the mail that carries
// it. Issuing it replaces the account's earlier unused links asked for by
// mail (domain.PasswordResetStore). An address with no enabled account is
// sent nothing. A mail that fails is tried again with a new link, which
// replaces the one that may not have arrived.
func (d *Dispatcher) reset(ctx context.Context, job domain.MailJob, now time.Time) (Message, bool, error) {
	if job.To.ID == "" {
		return Message{}, false, nil
	}
	if d.o.Resets == nil {
		d.o.Log.WarnContext(ctx, "A password-reset request was not mailed: reset links are mailed only through SMTP", "to", job.To.Email)
		return Message{}, false, nil
	}
	token, p := domain.NewPasswordReset(job.To.ID, "", now)
	err := d.o.Resets.CreatePasswordReset(ctx, p)
	if errors.Is(err, domain.ErrNotFound) { // the account was deleted meanwhile
		return Message{}, false, nil
	}
	if err != nil {
		return Message{}, false, err
	}
	msg, err := resetMessage(job.To, d.c.publicURL+"/reset/"+token)
	if err != nil {
		return Message{}, false, err
	}
	msg.Subject = d.c.prefix + msg.Subject
	// Each attempt carries another link, so it is another message.
	msg.Key = "reset." + strconv.FormatInt(job.ID, 10) + "." + strconv.Itoa(job.Attempt)
	job.Message = &msg
	return d.c.compose(job, now, nil)
}

var resetHTML = htmltemplate.Must(htmltemplate.New("reset").Parse(`<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Someone asked to reset the password of your Tollgate account ({{.Email}}).</p>
<p><a href="{{.Link}}">Choose a new password</a></p>
<p>The link works once, for 24 hours. If you did not ask for it, ignore this mail: your password stays as it is.</p>
</body></html>`))

func resetMessage(user domain.User, link string) (domain.MailMessage, error) {
	var html bytes.Buffer
	if err := resetHTML.Execute(&html, map[string]string{"Email": user.Email, "Link": link}); err != nil {
		return domain.MailMessage{}, err
	}
	text := "Someone asked to reset the password of your Tollgate account (" + user.Email + ").\n\n" +
		"Choose a new password: " + link + "\n\n" +
		"The link works once, for 24 hours. If you did not ask for it, ignore this mail: your password stays as it is.\n"
	return domain.MailMessage{To: user.Email, Subject: resetSubject, Text: text, HTML: html.String(), Link: link}, nil
}
