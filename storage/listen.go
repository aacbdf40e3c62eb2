package storage

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tollgatehq/tollgate/domain"
)

// listen holds one dedicated PostgreSQL connection LISTENing on the jobs
// channel, turning each notification into a local wake-up, and, while
// something in this process watches (see Watch), on the changes channel,
// passing each changed run to OnChange. A job notification is only a hint
// to look at the queue, so a lost one costs latency, never correctness:
// workers also poll. After a broken connection it reconnects with
// back-off, wakes the workers once and tells OnChange "" (re-read) if
// anything watched, in case it missed something.
func (db *DB) listen(ctx context.Context) {
	defer close(db.done)
	retry := domain.RetryPolicy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second, Multiplier: 2}
	for attempt := 1; ctx.Err() == nil; attempt++ {
		db.changes.connecting()
		err := db.listenOnce(ctx)
		db.changes.lost()
		if ctx.Err() != nil {
			return
		}
		backoff := retry.Backoff(attempt, 0)
		db.log.WarnContext(ctx, "Job notifications interrupted", "error", err, "retry_in", backoff)
		db.signal()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

func (db *DB) listenOnce(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+jobsChannel); err != nil {
		return err
	}
	for {
		if err := db.followWatchers(ctx, conn); err != nil {
			return err
		}
		wctx, cancel, ok := db.changes.waitContext(ctx)
		if !ok {
			continue
		}
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if n != nil {
			db.notified(n.Channel, n.Payload)
		}
		// An interrupted wait leaves the connection intact (pgx ends it
		// with a read deadline), ready to LISTEN or UNLISTEN.
		if err != nil && (ctx.Err() != nil || wctx.Err() == nil || conn.IsClosed()) {
			return err
		}
	}
}

// notified passes on one notification.
func (db *DB) notified(channel, payload string) {
	switch {
	case channel == changesChannel:
		db.emitChange(payload)
	case payload != db.self:
		db.signal()
	}
}

// followWatchers LISTENs on the changes channel or UNLISTENs, as watchers
// want. Exec returns once the server has answered, so a confirmed LISTEN
// hears every change committed after it.
func (db *DB) followWatchers(ctx context.Context, conn *pgx.Conn) error {
	for {
		stmt := db.changes.decide()
		if stmt == "" {
			return nil
		}
		if _, err := conn.Exec(ctx, stmt+" "+changesChannel); err != nil {
			return err
		}
		if stmt == "LISTEN" && db.changes.listened() {
			db.resync()
		}
	}
}
