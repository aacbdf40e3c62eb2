package mail

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// LinkStore keeps the decision links behind the Approve and Reject
// buttons of request mail (storage.DB, a domain.LinkStore).
type LinkStore interface {
	// CreateLink stores a link to a pending request (domain.LinkStore).
	CreateLink(ctx context.Context, l domain.DecisionLink, audit *domain.AuditEntry) error
	// Suspension returns a request with the votes cast on it.
	Suspension(ctx context.Context, id string) (domain.Suspension, error)
}

// buttons makes the Approve and Reject buttons of job's mail, for each
// approval it tells of that its recipient may decide and has not voted
// on: one decision link a request, for the recipient alone, used up by
// either button, ending with the request's deadline or in a week, and
// useless once the request is decided. Each attempt to send a mail makes
// new ones, so that a retried mail works whatever became of the last. A
// request decided meanwhile gets none.
func (d *Dispatcher) buttons(ctx context.Context, job domain.MailJob, now time.Time) (buttons, error) {
	if d.o.Links == nil || job.To.ID == "" || job.To.Disabled {
		return nil, nil
	}
	reqs := job.Digest
	if job.Suspension != nil {
		reqs = []domain.Suspension{*job.Suspension}
	}
	btn := buttons{}
	for _, r := range reqs {
		if r.Kind != domain.KindApproval || r.Status != domain.SuspensionPending {
			continue
		}
		s, err := d.o.Links.Suspension(ctx, r.ID) // with its votes: who voted gets no buttons
		if errors.Is(err, domain.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ttl, ok := decidable(s, job.To, now)
		if !ok {
			continue
		}
		token, l := domain.NewDecisionLink(s.ID, job.To.Email, job.To.Email, domain.LinkFromMail, now, ttl)
		l.ID = "mail-" + rand.Text()
		err = d.o.Links.CreateLink(ctx, l, nil)
		if _, gone := errors.AsType[*domain.ConflictError](err); gone || errors.Is(err, domain.ErrNotFound) {
			continue // decided or deleted since the mail was claimed
		}
		if err != nil {
			return nil, err
		}
		link := d.c.publicURL + "/links/" + token
		btn[s.ID] = [2]string{link + "?choice=approve", link + "?choice=reject"}
	}
	return btn, nil
}

// decidable says whether u may decide approval s from a mail at now, and
// for how long its buttons work. The buttons are a decision link u holds
// for themself, so a link's rules apply (domain.CheckLinkActor): nobody
// decides through one an approval of a run they started.
func decidable(s domain.Suspension, u domain.User, now time.Time) (time.Duration, bool) {
	if s.Kind != domain.KindApproval || s.Status != domain.SuspensionPending || s.CheckLinkActor(u, u) != nil {
		return 0, false
	}
	if _, voted := domain.CountedFor(s.Votes, u.Email); voted {
		return 0, false
	}
	ttl := domain.DefaultLinkTTL
	if s.WakeAt != nil && s.WakeAt.Sub(now) < ttl {
		ttl = s.WakeAt.Sub(now)
	}
	return ttl, ttl >= domain.MinLinkTTL
}
