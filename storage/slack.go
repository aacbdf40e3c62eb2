package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type slackMessageRow struct {
	bun.BaseModel `bun:"table:slack_messages,alias:sm"`

	ID           int64                   `bun:"id,pk,autoincrement"`
	SuspensionID string                  `bun:"suspension_id"`
	Target       string                  `bun:"target"`
	DM           bool                    `bun:"dm"`
	Status       string                  `bun:"status"`
	Attempt      int                     `bun:"attempt"`
	RunAt        time.Time               `bun:"run_at"`
	GiveUpAt     time.Time               `bun:"give_up_at"`
	LockedBy     *string                 `bun:"locked_by"`
	LeaseUntil   *time.Time              `bun:"lease_until"`
	ChannelID    string                  `bun:"channel_id"`
	TS           string                  `bun:"ts"`
	ShownStatus  domain.SuspensionStatus `bun:"shown_status"`
	ShownVotes   int                     `bun:"shown_votes"`
	LastError    string                  `bun:"last_error"`
	CreatedAt    time.Time               `bun:"created_at"`
	PostedAt     *time.Time              `bun:"posted_at"`
}

// Slack message states.
const (
	slackQueued  = "queued"
	slackPosting = "posting"
	slackPosted  = "posted"
	slackFailed  = "failed"
	// slackGone as a posted message's shown_status: Slack cannot update
	// it any more (deleted, its channel archived), so it is left alone.
	slackGone = "gone"
)

// slackRetention is how long a message is tried before it is given up.
const slackRetention = 24 * time.Hour

// slackMessages are the Slack messages the intents ask for, of the pending
// suspensions among requests: one in its channel, or one to each person
// who may decide it (of people) for "dm". Every round makes them, so that
// people a ladder adds get theirs; the unique index keeps one per request
// and target.
func slackMessages(requests map[string]domain.Suspension, intents []mailOutboxRow, people []domain.User, now time.Time) []slackMessageRow {
	var rows []slackMessageRow
	for _, o := range intents {
		s, ok := requests[o.SuspensionID]
		if !ok || s.Slack == "" {
			continue
		}
		row := slackMessageRow{SuspensionID: s.ID, Target: s.Slack, Status: slackQueued, RunAt: now, GiveUpAt: now.Add(slackRetention), CreatedAt: now}
		if s.Slack != domain.SlackDM {
			rows = append(rows, row)
			continue
		}
		for _, r := range domain.MailRecipients(s, people) {
			row.Target, row.DM = r.User.Email, true
			rows = append(rows, row)
		}
	}
	return rows
}

// fanOutSlack inserts the Slack messages of a fan-out's requests, in its
// transaction; a request posted to people by DM reads who may decide it
// among every enabled account, whatever their mail preference.
func (db *DB) fanOutSlack(ctx context.Context, tx bun.Tx, requests map[string]domain.Suspension, intents []mailOutboxRow, now time.Time) error {
	var people []domain.User
	for _, s := range requests {
		if s.Slack == domain.SlackDM {
			var users []mailUserRow
			if err := tx.NewSelect().Model(&users).Where("NOT disabled").Scan(ctx); err != nil {
				return err
			}
			for i := range users {
				people = append(people, users[i].toDomain())
			}
			break
		}
	}
	rows := slackMessages(requests, intents, people, now)
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.NewInsert().Model(&rows).On("CONFLICT DO NOTHING").Exec(ctx)
	return err
}

// ClaimSlack implements domain.SlackStore.
func (db *DB) ClaimSlack(ctx context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]domain.SlackMessage, error) {
	now = ts(now)
	var out []domain.SlackMessage
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var rows []slackMessageRow
		q := tx.NewSelect().Model(&rows).
			WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
				return q.WhereOr("status = ? AND run_at <= ?", slackQueued, now).WhereOr("status = ? AND lease_until < ?", slackPosting, now)
			}).OrderExpr("run_at, id").Limit(int64(limit))
		if db.dialect == Postgres {
			q.For("UPDATE SKIP LOCKED")
		}
		if err := q.Scan(ctx); err != nil || len(rows) == 0 {
			return err
		}
		ids := make([]int64, len(rows))
		for i := range rows {
			ids[i] = rows[i].ID
		}
		until := now.Add(lease)
		if _, err := tx.NewUpdate().Model((*slackMessageRow)(nil)).Set("status = ?", slackPosting).Set("attempt = attempt + 1").
			Set("locked_by = ?", worker).Set("lease_until = ?", until).Where("id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
			return err
		}
		for i := range rows {
			rows[i].Attempt++
		}
		var err error
		out, err = db.slackWithRequests(ctx, tx, rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim slack messages: %w", err)
	}
	return out, nil
}

// StaleSlack implements domain.SlackStore.
func (db *DB) StaleSlack(ctx context.Context, now time.Time, limit int) ([]domain.SlackMessage, error) {
	var rows []slackMessageRow
	err := db.bun.NewSelect().Model(&rows).Join("JOIN suspensions AS s ON s.id = sm.suspension_id").
		Where("sm.status = ? AND sm.shown_status = ? AND sm.run_at <= ?", slackPosted, domain.SuspensionPending, ts(now)).
		Where("s.status <> sm.shown_status OR (SELECT count(*) FROM votes AS v WHERE v.suspension_id = sm.suspension_id) <> sm.shown_votes").
		OrderExpr("sm.run_at, sm.id").Limit(int64(limit)).Scan(ctx)
	if err != nil || len(rows) == 0 {
		return nil, translate(err)
	}
	return db.slackWithRequests(ctx, db.bun, rows)
}

// SlackMessagesOf implements domain.SlackStore.
func (db *DB) SlackMessagesOf(ctx context.Context, suspensionID string) ([]domain.SlackMessage, error) {
	var rows []slackMessageRow
	if err := db.bun.NewSelect().Model(&rows).Where("suspension_id = ? AND status = ?", suspensionID, slackPosted).OrderExpr("id").Scan(ctx); err != nil {
		return nil, translate(err)
	}
	return db.slackWithRequests(ctx, db.bun, rows)
}

// slackWithRequests is rows as messages with their requests and votes;
// a message whose request is gone is left out.
func (db *DB) slackWithRequests(ctx context.Context, idb bun.IDB, rows []slackMessageRow) ([]domain.SlackMessage, error) {
	ids := make([]string, 0, len(rows))
	for i := range rows {
		ids = append(ids, rows[i].SuspensionID)
	}
	var srows []suspensionRow
	if err := idb.NewSelect().Model(&srows).Where("id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, err
	}
	list, err := suspensionsOf(srows)
	if err != nil {
		return nil, err
	}
	if err := db.withVotes(ctx, idb, list); err != nil {
		return nil, err
	}
	byID := make(map[string]domain.Suspension, len(list))
	for _, s := range list {
		byID[s.ID] = s
	}
	out := make([]domain.SlackMessage, 0, len(rows))
	for _, r := range rows {
		s, ok := byID[r.SuspensionID]
		if !ok {
			continue
		}
		out = append(out, domain.SlackMessage{ID: r.ID, Attempt: r.Attempt, Target: r.Target, DM: r.DM, Suspension: s, ChannelID: r.ChannelID, TS: r.TS,
			ShownStatus: r.ShownStatus, ShownVotes: r.ShownVotes, GiveUpAt: r.GiveUpAt.UTC()})
	}
	return out, nil
}

// FinishSlack implements domain.SlackStore.
func (db *DB) FinishSlack(ctx context.Context, outcomes []domain.SlackOutcome, now time.Time) error {
	if len(outcomes) == 0 {
		return nil
	}
	now = ts(now)
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		for _, o := range outcomes {
			if o.RetryAt.IsZero() {
				o.RetryAt = now
			}
			// An outcome counts only while the row is still at the attempt
			// it came from: a poster whose lease another took over records
			// nothing.
			q := tx.NewUpdate().Model((*slackMessageRow)(nil)).Where("id = ? AND attempt = ?", o.ID, o.Attempt)
			switch {
			case o.Update && o.Posted:
				// Only ever forward: an update that read an older state and
				// finished last records nothing.
				q.Set("shown_status = ?", o.ShownStatus).Set("shown_votes = ?", o.ShownVotes).Set("last_error = ''").
					Where("shown_status = ? AND (? <> ? OR shown_votes <= ?)", domain.SuspensionPending, o.ShownStatus, domain.SuspensionPending, o.ShownVotes)
			case o.Update && o.Failed:
				q.Set("shown_status = ?", slackGone).Set("last_error = ?", o.Error)
			case o.Update:
				q.Set("last_error = ?", o.Error).Set("run_at = ?", ts(o.RetryAt)).Set("attempt = attempt + 1")
			case o.Posted:
				q.Set("locked_by = NULL").Set("lease_until = NULL")
				q.Set("status = ?", slackPosted).Set("channel_id = ?", o.ChannelID).Set("ts = ?", o.TS).
					Set("shown_status = ?", o.ShownStatus).Set("shown_votes = ?", o.ShownVotes).Set("last_error = ''").
					Set("posted_at = COALESCE(posted_at, ?)", now)
			case o.Failed:
				q.Set("status = ?", slackFailed).Set("last_error = ?", o.Error).Set("locked_by = NULL").Set("lease_until = NULL")
			default:
				q.Set("status = ?", slackQueued).Set("run_at = ?", ts(o.RetryAt)).Set("last_error = ?", o.Error).Set("locked_by = NULL").Set("lease_until = NULL")
			}
			if _, err := q.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record slack messages: %w", err)
	}
	return nil
}
