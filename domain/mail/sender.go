package mail

import (
	"context"
	"log/slog"
)

// Sender delivers messages, in one connection where it can. It returns
// one error per message, nil for each delivered: a message not delivered
// is tried again later.
type Sender interface {
	Send(ctx context.Context, msgs []Message) []error
}

// Log writes each mail to the server log instead of sending it, for a
// server without SMTP: recipient, subject and link.
type Log struct{ Logger *slog.Logger }

// Send logs msgs.
func (l Log) Send(ctx context.Context, msgs []Message) []error {
	for _, m := range msgs {
		l.Logger.InfoContext(ctx, "Mail (no SMTP server configured, so it is written here)", "to", m.To, "subject", m.Subject, "link", m.Link)
	}
	return make([]error, len(msgs))
}
