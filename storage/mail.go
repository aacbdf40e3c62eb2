package storage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// Mail to the people who may act on a suspension travels in two steps. The
// commit of the suspension inserts one mail_outbox row with it (queueMail),
// which keeps the commit path to one small insert. The mail dispatcher then
// fans each outbox row out into mail_deliveries, one per person, and claims
// and sends those with a lease, as the engine does jobs.

// Delivery statuses.
const (
	mailQueued   = "queued"
	mailHeld     = "held"
	mailSending  = "sending"
	mailSent     = "sent"
	mailDigested = "digested"
	mailFailed   = "failed"
)

// mailRetention is how long a mail is tried before it is given up.
const mailRetention = 24 * time.Hour

type mailOutboxRow struct {
	bun.BaseModel `bun:"table:mail_outbox,alias:mo"`

	SuspensionID string    `bun:"suspension_id,pk"`
	Round        int       `bun:"round,pk"`
	CreatedAt    time.Time `bun:"created_at"`
}

type mailDeliveryRow struct {
	bun.BaseModel `bun:"table:mail_deliveries,alias:md"`

	ID           int64           `bun:"id,pk,autoincrement"`
	Kind         domain.MailKind `bun:"kind"`
	Status       string          `bun:"status"`
	SuspensionID *string         `bun:"suspension_id"`
	UserID       *string         `bun:"user_id"`
	Recipient    string          `bun:"recipient"`
	DigestDay    *string         `bun:"digest_day"`
	Message      json.RawMessage `bun:"message,type:jsonb,nullzero"`
	Attempt      int             `bun:"attempt"`
	RunAt        time.Time       `bun:"run_at"`
	GiveUpAt     time.Time       `bun:"give_up_at"`
	LockedBy     *string         `bun:"locked_by"`
	LeaseUntil   *time.Time      `bun:"lease_until"`
	LastError    string          `bun:"last_error"`
	CreatedAt    time.Time       `bun:"created_at"`
	SentAt       *time.Time      `bun:"sent_at"`
	// Round is 0 for a request's first mail, n for the reminder of its
	// ladder's rung n-1.
	Round int `bun:"round"`
}

// mailUserRow is a user as mail sees them, with their preference.
type mailUserRow struct {
	bun.BaseModel `bun:"table:users,alias:u"`

	ID       string                `bun:"id,pk"`
	Email    string                `bun:"email"`
	Name     string                `bun:"name"`
	Role     domain.Role           `bun:"role"`
	Disabled bool                  `bun:"disabled"`
	Pref     domain.MailPreference `bun:"mail_preference"`
}

func (u *mailUserRow) toDomain() domain.User {
	return domain.User{ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, Disabled: u.Disabled}
}

// queueMail commits, with a new suspension that waits for a person, the
// intent to tell the people who may act on it.
func (w *commitWriter) queueMail(ctx context.Context, row *suspensionRow) error {
	if !row.Kind.WaitsForPerson() {
		return nil
	}
	intent := &mailOutboxRow{SuspensionID: row.ID, CreatedAt: w.now}
	if _, done, err := sqliteMail.exec(ctx, w.db, w.tx, intent); done {
		return err
	}
	return w.b.add(ctx, w.tx.NewInsert().Model(intent))
}

// MailRound does one round of a mail dispatcher in one transaction (see
// domain.MailRound), so that a busy outbox costs one write a round: on
// SQLite every write transaction waits for, and holds up, the engine's
// commits. The suspensions and people a fan-out read are reused for the
// mails it claims. When there is nothing to record, fan out or claim, no
// write transaction is begun at all.
func (db *DB) MailRound(ctx context.Context, r domain.MailRound) (domain.MailClaim, error) {
	now := ts(r.Now)
	if len(r.Finished) == 0 {
		work, err := db.mailWaiting(ctx, now)
		if err != nil {
			return domain.MailClaim{}, fmt.Errorf("mail round: %w", err)
		}
		if !work {
			return domain.MailClaim{}, nil
		}
	}
	var c domain.MailClaim
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		c = domain.MailClaim{}
		if err := db.finishMail(ctx, tx, r.Finished, now); err != nil {
			return err
		}
		if r.Limit <= 0 {
			return nil // only recording
		}
		var err error
		if c.Jobs, err = db.claimMail(ctx, tx, r.Worker, now, r.Lease, r.Limit); err != nil {
			return err
		}
		room := r.Limit - len(c.Jobs)
		if room == 0 {
			return nil
		}
		fanned, n, err := db.fanOutMail(ctx, tx, r, room)
		c.Jobs, c.FannedOut = append(c.Jobs, fanned...), n
		return err
	})
	if err != nil {
		return domain.MailClaim{}, fmt.Errorf("mail round: %w", err)
	}
	return c, nil
}

// mailWaiting reports whether the outbox holds intents or mail is due
// (or was left by a sender whose lease ran out).
func (db *DB) mailWaiting(ctx context.Context, now time.Time) (bool, error) {
	var work bool
	err := db.bun.NewSelect().ColumnExpr("EXISTS (?) OR EXISTS (?)",
		db.bun.NewSelect().Model((*mailOutboxRow)(nil)).ColumnExpr("1"),
		db.bun.NewSelect().Model((*mailDeliveryRow)(nil)).ColumnExpr("1").
			WhereOr("status = ? AND run_at <= ?", mailQueued, now).WhereOr("status = ? AND lease_until < ?", mailSending, now)).
		Scan(ctx, &work)
	return work, err
}

// fanOutMail turns at most room outbox rows into deliveries, one per
// person told (domain.MailRecipients, each by their preference), and the
// Slack messages of requests posted to Slack (fanOutSlack), and
// returns the first room of those due now, inserted claimed for r.Worker,
// with how many outbox rows it took: taking no more rows than the round
// can send keeps a backlog in the outbox, where nothing has to be claimed
// and read again. A person held for the digest gets a held row under the
// day of r.NextDigest, and that day's digest is queued for them once. A
// suspension no longer pending tells nobody. On PostgreSQL SKIP LOCKED
// lets several servers fan out disjoint rows.
func (db *DB) fanOutMail(ctx context.Context, tx bun.Tx, r domain.MailRound, room int) ([]domain.MailJob, int, error) {
	var intents []mailOutboxRow
	q := tx.NewSelect().Model(&intents).OrderExpr("created_at, suspension_id, round").Limit(int64(room))
	if db.dialect == Postgres {
		q.For("UPDATE SKIP LOCKED")
	}
	if err := q.Scan(ctx); err != nil || len(intents) == 0 {
		return nil, 0, err
	}
	ids := make([]string, len(intents))
	for i, o := range intents {
		ids[i] = o.SuspensionID
	}
	var rows []suspensionRow
	if err := tx.NewSelect().Model(&rows).Where("id IN (?)", bun.List(ids)).Where("status = ?", domain.SuspensionPending).Scan(ctx); err != nil {
		return nil, 0, err
	}
	var users []mailUserRow
	if len(rows) > 0 {
		if err := tx.NewSelect().Model(&users).Where("NOT disabled").Where("mail_preference <> ?", domain.MailOff).Scan(ctx); err != nil {
			return nil, 0, err
		}
	}
	now := ts(r.Now)
	f, err := mailDeliveries(rows, intents, users, now, ts(r.NextDigest))
	if err != nil {
		return nil, 0, err
	}
	if r.Slack {
		if err := db.fanOutSlack(ctx, tx, f.requests, intents, now); err != nil {
			return nil, 0, err
		}
	}
	f.claim(r.Worker, now.Add(r.Lease), room)
	var jobs []domain.MailJob
	if len(f.rows) > 0 {
		var inserted []mailDeliveryRow
		err := tx.NewInsert().Model(&f.rows).On("CONFLICT DO NOTHING").Returning("id, suspension_id, user_id, status, round").Scan(ctx, &inserted)
		if err != nil && !isNoRows(err) {
			return nil, 0, err
		}
		jobs = f.jobs(inserted)
		if err := askedBy(ctx, tx, jobs, f.users); err != nil {
			return nil, 0, err
		}
	}
	del := tx.NewDelete().Model((*mailOutboxRow)(nil))
	for _, o := range intents {
		del.WhereOr("suspension_id = ? AND round = ?", o.SuspensionID, o.Round)
	}
	_, err = del.Exec(ctx)
	return jobs, len(intents), err
}

// fanOut is what a fan-out makes: the delivery rows, and the requests and
// people they are about, by id.
type fanOut struct {
	rows     []mailDeliveryRow
	users    map[string]domain.User
	requests map[string]domain.Suspension
}

// claim marks the first n request mails due now as claimed by worker
// until leaseUntil: the round sends them without claiming them again.
func (f *fanOut) claim(worker string, leaseUntil time.Time, n int) {
	for i := range f.rows {
		if n == 0 {
			return
		}
		if d := &f.rows[i]; d.Kind == domain.MailKindRequest && d.Status == mailQueued {
			d.Status, d.Attempt, d.LockedBy, d.LeaseUntil = mailSending, 1, &worker, &leaseUntil
			n--
		}
	}
}

// jobs are the claimed rows among those inserted (a row the unique
// indexes refused is not among them), ready to send.
func (f *fanOut) jobs(inserted []mailDeliveryRow) []domain.MailJob {
	type key struct {
		suspension, user string
		round            int
	}
	ids := make(map[key]int64, len(inserted))
	for _, d := range inserted {
		if d.Status == mailSending {
			ids[key{derefString(d.SuspensionID), derefString(d.UserID), d.Round}] = d.ID
		}
	}
	var out []domain.MailJob
	for i := range f.rows {
		d := &f.rows[i]
		id, ok := ids[key{derefString(d.SuspensionID), derefString(d.UserID), d.Round}]
		if !ok || d.Status != mailSending {
			continue
		}
		j := mailJob(d, id, f.users)
		s := f.requests[derefString(d.SuspensionID)]
		j.Suspension = &s
		out = append(out, j)
	}
	return out
}

// mailJob is the job of sending the claimed delivery d, whose id is id:
// to its user among users, or to its recipient address when it is mail
// to no user. What the mail is about is the caller's to add.
func mailJob(d *mailDeliveryRow, id int64, users map[string]domain.User) domain.MailJob {
	j := domain.MailJob{ID: id, Attempt: d.Attempt, Kind: d.Kind, To: domain.User{Email: d.Recipient}, GiveUpAt: d.GiveUpAt.UTC(), Round: d.Round}
	if u, ok := users[derefString(d.UserID)]; ok {
		j.To = u
	}
	return j
}

// mailDeliveries are the deliveries the intents ask for, of the pending
// suspensions among rows, to users.
func mailDeliveries(rows []suspensionRow, intents []mailOutboxRow, users []mailUserRow, now, nextDigest time.Time) (fanOut, error) {
	f := fanOut{users: make(map[string]domain.User, len(users)), requests: make(map[string]domain.Suspension, len(rows))}
	people := make([]domain.User, len(users))
	prefs := make(map[string]domain.MailPreference, len(users))
	for i := range users {
		people[i], prefs[users[i].ID] = users[i].toDomain(), users[i].Pref
		f.users[people[i].ID] = people[i]
	}
	day := nextDigest.Format(time.DateOnly)
	digests := map[string]bool{}
	pending := make(map[string]*suspensionRow, len(rows))
	for i := range rows {
		pending[rows[i].ID] = &rows[i]
	}
	for _, o := range intents {
		row, ok := pending[o.SuspensionID]
		if !ok {
			continue // decided before its mail went out
		}
		s, err := row.toDomain()
		if err != nil {
			return f, err
		}
		f.requests[s.ID] = s
		for _, r := range domain.MailRecipients(s, people) {
			d := mailDeliveryRow{Kind: domain.MailKindRequest, Status: mailQueued, SuspensionID: &row.ID, UserID: &r.User.ID,
				Recipient: r.User.Email, RunAt: now, GiveUpAt: now.Add(mailRetention), CreatedAt: now, Round: o.Round}
			switch prefs[r.User.ID].Timing(r.Personal) {
			case domain.MailNever:
				continue
			case domain.MailInDigest:
				d.Status, d.DigestDay, d.RunAt, d.GiveUpAt = mailHeld, &day, nextDigest, nextDigest.Add(mailRetention)
				if !digests[r.User.ID] {
					digests[r.User.ID] = true
					f.rows = append(f.rows, mailDeliveryRow{Kind: domain.MailKindDigest, Status: mailQueued, UserID: &r.User.ID, Recipient: r.User.Email,
						DigestDay: &day, RunAt: nextDigest, GiveUpAt: nextDigest.Add(mailRetention), CreatedAt: now})
				}
			}
			f.rows = append(f.rows, d)
		}
	}
	return f, nil
}

// QueueMail queues a one-off message, sent by the mail dispatcher with the
// same retries as request mail.
func (db *DB) QueueMail(ctx context.Context, m domain.MailMessage, now time.Time) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("queue mail to %s: %w", m.To, err)
	}
	now = ts(now)
	row := &mailDeliveryRow{Kind: domain.MailKindMessage, Status: mailQueued, Recipient: m.To, Message: body,
		RunAt: now, GiveUpAt: now.Add(mailRetention), CreatedAt: now}
	err = db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewInsert().Model(row).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("queue mail to %s: %w", m.To, err)
	}
	return nil
}

// claimMail claims at most limit mails that are due, oldest first, for
// worker until now+lease: first, mails whose sender's lease ran out (a
// server that died mid-send) are queued again. On PostgreSQL the claim
// skips rows other servers are claiming; SQLite's single writer makes it
// exclusive.
func (db *DB) claimMail(ctx context.Context, tx bun.Tx, worker string, now time.Time, lease time.Duration, limit int) ([]domain.MailJob, error) {
	if _, err := tx.NewUpdate().Model((*mailDeliveryRow)(nil)).Set("status = ?", mailQueued).Set("locked_by = NULL").Set("lease_until = NULL").
		Where("status = ? AND lease_until < ?", mailSending, now).Exec(ctx); err != nil {
		return nil, err
	}
	due := tx.NewSelect().Model((*mailDeliveryRow)(nil)).Column("id").
		Where("status = ? AND run_at <= ?", mailQueued, now).OrderExpr("run_at, id").Limit(int64(limit))
	if db.dialect == Postgres {
		due.For("UPDATE SKIP LOCKED")
	}
	var rows []mailDeliveryRow
	err := tx.NewUpdate().Model((*mailDeliveryRow)(nil)).
		Set("status = ?", mailSending).Set("attempt = attempt + 1").
		Set("locked_by = ?", worker).Set("lease_until = ?", now.Add(lease)).
		Where("id IN (?)", due).Returning("*").Scan(ctx, &rows)
	if err != nil && !isNoRows(err) {
		return nil, err
	}
	return db.mailJobs(ctx, tx, rows)
}

// mailJobs loads what the claimed rows are about: the recipients and the
// requests (one query each, for all the rows), a digest's pending
// requests, a message's content.
func (db *DB) mailJobs(ctx context.Context, tx bun.Tx, rows []mailDeliveryRow) ([]domain.MailJob, error) {
	users, requests, err := mailSubjects(ctx, tx, rows)
	if err != nil {
		return nil, err
	}
	jobs := make([]domain.MailJob, 0, len(rows))
	for i := range rows {
		r := &rows[i]
		j := mailJob(r, r.ID, users)
		switch r.Kind {
		case domain.MailKindRequest:
			s, ok := requests[derefString(r.SuspensionID)]
			if !ok {
				return nil, fmt.Errorf("mail %d: suspension %s: %w", r.ID, derefString(r.SuspensionID), domain.ErrNotFound)
			}
			j.Suspension = &s
		case domain.MailKindDigest:
			j.Day = derefString(r.DigestDay)
			items, err := digestItems(ctx, tx, derefString(r.UserID), j.Day)
			if err != nil {
				return nil, err
			}
			j.Digest = items
		case domain.MailKindMessage:
			j.Message = new(domain.MailMessage)
			if err := json.Unmarshal(r.Message, j.Message); err != nil {
				return nil, err
			}
		}
		jobs = append(jobs, j)
	}
	if err := askedBy(ctx, tx, jobs, users); err != nil {
		return nil, err
	}
	return jobs, resetAccounts(ctx, tx, jobs)
}

// resetAccounts sets the recipient of each password-reset request among
// jobs to the enabled account with its email, if there is one (one query
// for all of them); the others keep only the email, and are sent nothing.
func resetAccounts(ctx context.Context, tx bun.Tx, jobs []domain.MailJob) error {
	var emails []string
	for _, j := range jobs {
		if j.Message != nil && j.Message.Reset {
			emails = append(emails, strings.ToLower(j.To.Email))
		}
	}
	if len(emails) == 0 {
		return nil
	}
	var us []mailUserRow
	if err := tx.NewSelect().Model(&us).Where("email IN (?) AND NOT disabled", bun.List(emails)).Scan(ctx); err != nil {
		return err
	}
	byEmail := make(map[string]domain.User, len(us))
	for i := range us {
		byEmail[us[i].Email] = us[i].toDomain()
	}
	for i := range jobs {
		if u, ok := byEmail[strings.ToLower(jobs[i].To.Email)]; ok && jobs[i].Message != nil && jobs[i].Message.Reset {
			jobs[i].To = u
		}
	}
	return nil
}

// askedBy fills in who asks, in the jobs about a request: the person who
// started its run, by name, from users or (for the others) one query.
func askedBy(ctx context.Context, tx bun.Tx, jobs []domain.MailJob, users map[string]domain.User) error {
	var missing []string
	for _, j := range jobs {
		if j.Suspension == nil || j.Suspension.RunStartedBy == "" {
			continue
		}
		if _, ok := users[j.Suspension.RunStartedBy]; !ok {
			missing = append(missing, j.Suspension.RunStartedBy)
		}
	}
	if len(missing) > 0 {
		var us []mailUserRow
		if err := tx.NewSelect().Model(&us).Where("id IN (?)", bun.List(missing)).Scan(ctx); err != nil {
			return err
		}
		users = maps.Clone(users)
		for i := range us {
			users[us[i].ID] = us[i].toDomain()
		}
	}
	for i := range jobs {
		if s := jobs[i].Suspension; s != nil && s.RunStartedBy != "" {
			if u, ok := users[s.RunStartedBy]; ok {
				jobs[i].AskedBy = cmp.Or(u.Name, u.Email)
			}
		}
	}
	return nil
}

// mailSubjects reads the users and suspensions the rows name, by id.
func mailSubjects(ctx context.Context, tx bun.Tx, rows []mailDeliveryRow) (map[string]domain.User, map[string]domain.Suspension, error) {
	var userIDs, suspensionIDs []string
	for i := range rows {
		if rows[i].UserID != nil {
			userIDs = append(userIDs, *rows[i].UserID)
		}
		if rows[i].SuspensionID != nil {
			suspensionIDs = append(suspensionIDs, *rows[i].SuspensionID)
		}
	}
	users := map[string]domain.User{}
	requests := map[string]domain.Suspension{}
	if len(userIDs) > 0 {
		var us []mailUserRow
		if err := tx.NewSelect().Model(&us).Where("id IN (?)", bun.List(userIDs)).Scan(ctx); err != nil {
			return nil, nil, err
		}
		for i := range us {
			users[us[i].ID] = us[i].toDomain()
		}
	}
	if len(suspensionIDs) > 0 {
		var ss []suspensionRow
		if err := tx.NewSelect().Model(&ss).Where("id IN (?)", bun.List(suspensionIDs)).Scan(ctx); err != nil {
			return nil, nil, err
		}
		for i := range ss {
			s, err := ss[i].toDomain()
			if err != nil {
				return nil, nil, err
			}
			requests[s.ID] = s
		}
	}
	return users, requests, nil
}

// digestItems are the pending requests held for a person's digest of day
// (or an earlier one that missed its digest), oldest first.
func digestItems(ctx context.Context, tx bun.Tx, userID, day string) ([]domain.Suspension, error) {
	var rows []suspensionRow
	err := tx.NewSelect().Model(&rows).
		Where("s.status = ?", domain.SuspensionPending).
		Where("s.id IN (?)", tx.NewSelect().Model((*mailDeliveryRow)(nil)).Column("suspension_id").
			Where("user_id = ? AND status = ? AND digest_day <= ?", userID, mailHeld, day)).
		OrderExpr("s.suspended_at, s.id").Scan(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]domain.Suspension, 0, len(rows))
	for i := range rows {
		s, err := rows[i].toDomain()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// finishMail records what became of claimed mails, each only while its
// claim holds (same attempt, still sending): a lease taken over by another
// server is theirs. A sent digest takes the requests held for it off the
// list.
//
// A one-off message's content (a password-reset link, say) is kept only
// until it is sent or given up, so no capability stays in the database.
func (db *DB) finishMail(ctx context.Context, tx bun.Tx, outcomes []domain.MailOutcome, now time.Time) error {
	var sent []domain.MailOutcome
	for _, o := range outcomes {
		if o.Sent {
			sent = append(sent, o)
			continue
		}
		q := tx.NewUpdate().Model((*mailDeliveryRow)(nil)).Set("locked_by = NULL").Set("lease_until = NULL").Set("last_error = ?", o.Error).
			Where("id = ? AND attempt = ? AND status = ?", o.ID, o.Attempt, mailSending)
		if o.RetryAt.IsZero() {
			q.Set("status = ?", mailFailed).Set("message = NULL")
		} else {
			q.Set("status = ?", mailQueued).Set("run_at = ?", ts(o.RetryAt))
		}
		if _, err := q.Exec(ctx); err != nil {
			return err
		}
	}
	return db.finishSent(ctx, tx, sent, now)
}

// finishSent marks the sent mails of one round in one statement, the
// common case, and takes the requests a sent digest listed off the list.
func (db *DB) finishSent(ctx context.Context, tx bun.Tx, sent []domain.MailOutcome, now time.Time) error {
	if len(sent) == 0 {
		return nil
	}
	claims := make([]any, len(sent))
	for i, o := range sent {
		claims[i] = bun.Safe(fmt.Sprintf("(%d, %d)", o.ID, o.Attempt))
	}
	var done []mailDeliveryRow
	err := tx.NewUpdate().Model(&done).
		Set("status = ?", mailSent).Set("sent_at = ?", now).Set("message = NULL").
		Set("locked_by = NULL").Set("lease_until = NULL").Set("last_error = ''").
		Where("status = ? AND (id, attempt) IN (VALUES ?)", mailSending, bun.List(claims)).
		Returning("kind, user_id, digest_day").Scan(ctx)
	if err != nil && !isNoRows(err) {
		return err
	}
	for _, d := range done {
		if d.Kind != domain.MailKindDigest {
			continue
		}
		if _, err := tx.NewUpdate().Model((*mailDeliveryRow)(nil)).Set("status = ?", mailDigested).
			Where("user_id = ? AND status = ? AND digest_day <= ?", derefString(d.UserID), mailHeld, derefString(d.DigestDay)).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// MailPreference implements domain.MailPreferences.
func (db *DB) MailPreference(ctx context.Context, userID string) (domain.MailPreference, error) {
	u := new(mailUserRow)
	if err := db.bun.NewSelect().Model(u).Where("id = ?", userID).Scan(ctx); err != nil {
		return "", fmt.Errorf("mail preference of %s: %w", userID, translate(err))
	}
	return u.Pref, nil
}

// SetMailPreference implements domain.MailPreferences.
func (db *DB) SetMailPreference(ctx context.Context, userID string, p domain.MailPreference, now time.Time) error {
	var n int64
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*mailUserRow)(nil)).Set("mail_preference = ?", p).Set("updated_at = ?", ts(now)).
			Where("id = ?", userID).Exec(ctx)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err == nil && n == 0 {
		err = domain.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("set mail preference of %s: %w", userID, err)
	}
	return nil
}

var _ domain.MailPreferences = (*DB)(nil)
