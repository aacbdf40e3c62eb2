package tollgate

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tollgatehq/tollgate/storage"
)

// housekeepingEvery is how often housekeep folds the inbox's count deltas;
// expired sessions, unfinished uploads and finished runs past their
// retention are swept every sweepRounds rounds (and at start),
// retentionBatch runs or uploadBatch documents (each with up to a request's
// worth of chunks) per transaction. An upload still staged
// after stagedUploadMaxAge was cut off (a crash, a lost connection): no
// upload within the request limits takes that long.
const (
	housekeepingEvery  = 5 * time.Second
	sweepRounds        = 60
	retentionBatch     = 500
	uploadBatch        = 20
	stagedUploadMaxAge = time.Hour
)

// housekeep keeps the database tidy until ctx ends: it folds pending-count
// deltas into their counters (so counting stays cheap), deletes expired
// sessions, documents left staged by uploads that never finished and,
// unless retention is 0, finished runs that ended longer than retention
// ago, schedules' fire records as old and webhook events as old (at least
// a week). Several servers
// sharing a database may all run it.
func housekeep(ctx context.Context, db *storage.DB, log *slog.Logger, every, retention time.Duration) {
	staged := sweep{del: db.DeleteStagedDocuments, batch: uploadBatch, what: "unfinished uploads", count: "documents", cutoff: "staged_before"}
	finished := sweep{del: db.DeleteFinishedRuns, batch: retentionBatch, what: "finished runs past retention", count: "runs", cutoff: "finished_before"}
	hookEvents := sweep{del: db.DeleteHookEvents, batch: retentionBatch, what: "old webhook events", count: "events", cutoff: "recorded_before"}
	fires := sweep{del: db.DeleteScheduleFires, batch: retentionBatch, what: "schedule fire records past retention", count: "fires", cutoff: "recorded_before"}
	t := time.NewTicker(every)
	defer t.Stop()
	for round := 0; ; round++ {
		if _, err := db.CompactCounts(ctx); err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "Folding the inbox's count deltas failed", "error", err)
		}
		if round%sweepRounds == 0 {
			if n, err := db.DeleteExpiredSessions(ctx, time.Now()); err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "Deleting expired sessions failed", "error", err)
			} else if n > 0 {
				log.InfoContext(ctx, "Deleted expired sessions", "sessions", n)
			}
			staged.run(ctx, log, time.Now().Add(-stagedUploadMaxAge))
			if retention > 0 {
				finished.run(ctx, log, time.Now().Add(-retention))
				fires.run(ctx, log, time.Now().Add(-retention))
				hookEvents.run(ctx, log, time.Now().Add(-max(retention, hookEventMinAge)))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// hookEventMinAge is the youngest a webhook event may be when deleted:
// its deliveries are tried for 24 hours, and their attempts stay listed
// a while after. An event goes with its deliveries and attempts.
const hookEventMinAge = 7 * 24 * time.Hour

// sweep is one kind of row that housekeep deletes once it is older than a
// cutoff, in batches, so that no transaction (and, on SQLite, no wait of
// the engine's writers) grows with the backlog.
type sweep struct {
	// del deletes up to limit rows from before the cutoff and says how
	// many it deleted.
	del   func(ctx context.Context, before time.Time, limit int) (int, error)
	batch int
	// what names the rows in the log; count and cutoff are the keys of
	// how many were deleted and of the cutoff.
	what, count, cutoff string
}

// run deletes the rows from before the cutoff, a batch at a time, until a
// batch comes back short or ctx ends, and logs how many went.
func (s sweep) run(ctx context.Context, log *slog.Logger, before time.Time) {
	total := 0
	for ctx.Err() == nil {
		n, err := s.del(ctx, before, s.batch)
		if err != nil {
			if ctx.Err() == nil {
				log.WarnContext(ctx, "Deleting "+s.what+" failed", "error", err)
			}
			break
		}
		total += n
		if n < s.batch {
			break
		}
	}
	if total > 0 {
		log.InfoContext(ctx, "Deleted "+s.what, s.count, total, s.cutoff, before.UTC().Format(time.RFC3339))
	}
}

// prepareDB applies the migrations, or with noMigrate checks that none is
// missing, and takes back the jobs a dead process left running on the
// embedded database.
func prepareDB(ctx context.Context, db *storage.DB, noMigrate bool, log *slog.Logger) error {
	if !noMigrate {
		if err := db.Migrate(ctx); err != nil {
			return err
		}
	} else if ok, err := db.MigrationsCurrent(ctx); err != nil || !ok {
		return errors.Join(errors.New("the database schema is not current: run tollgate migrate"), err)
	}
	// The embedded database belongs to this one process: a job still marked
	// running was claimed by a process that died, so it runs again now
	// instead of after its lease.
	if n, err := db.ResetRunningJobs(ctx); err != nil {
		return err
	} else if n > 0 {
		log.InfoContext(ctx, "Re-queued jobs interrupted by the last shutdown", "jobs", n)
	}
	return nil
}
