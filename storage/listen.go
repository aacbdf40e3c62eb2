package storage

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// listen holds one dedicated PostgreSQL connection LISTENing on the jobs
// channel, turning each notification into a local wake-up, and on the
// changes channel, passing each changed run to OnChange. A notification
// is only a hint to look at the queue, so a lost one costs latency, never
// correctness: workers also poll. After a broken connection it reconnects
// with back-off and wakes the workers once, in case it missed something.
func (db *DB) listen(ctx context.Context) {
	defer close(db.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := db.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		db.log.WarnContext(ctx, "Job notifications interrupted", "error", err, "retry_in", backoff)
		db.signal()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (db *DB) listenOnce(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+jobsChannel+"; LISTEN "+changesChannel); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == changesChannel {
			db.emitChange(n.Payload)
			continue
		}
		if n.Payload != db.self {
			db.signal()
		}
	}
}
