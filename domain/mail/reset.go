package mail

import (
	"bytes"
	"context"
	htmltemplate "html/template"

	"github.com/tollgatehq/tollgate/domain"
)

// ResetLinks mails the password-reset links people ask for on the login
// page, through the durable outbox.
type ResetLinks struct{ Mailer domain.Mailer }

// SendPasswordReset queues a mail to user with link, a one-time link to
// choose a new password.
func (r ResetLinks) SendPasswordReset(ctx context.Context, user domain.User, link string) error {
	m, err := resetMessage(user, link)
	if err != nil {
		return err
	}
	return r.Mailer.Queue(ctx, m)
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
	return domain.MailMessage{To: user.Email, Subject: "Reset your Tollgate password", Text: text, HTML: html.String(), Link: link}, nil
}
