package storage

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// PendingCounts counts pending suspensions by reason and by kind, within a
// workflow when workflowID is set. It reads the counters migration 0005's
// triggers keep, plus the deltas not folded in yet (PostgreSQL's; SQLite's
// triggers update the counters and leave none), so it costs the same with a
// thousand suspensions as with millions.
func (db *DB) PendingCounts(ctx context.Context, workflowID string) (reasons, kinds []domain.GroupCount, err error) {
	return db.PendingCountsOf(ctx, workflowID, domain.WaitsAny)
}

// PendingCountsOf is PendingCounts of the suspensions waits selects:
// those people are asked, or those machines resume.
func (db *DB) PendingCountsOf(ctx context.Context, workflowID string, waits domain.Waits) (reasons, kinds []domain.GroupCount, err error) {
	pairs, err := db.PendingCountsWhere(ctx, domain.SuspensionFilter{WorkflowID: workflowID, Waits: waits})
	if err != nil {
		return nil, nil, err
	}
	byReason, byKind := map[string]int{}, map[string]int{}
	for _, p := range pairs {
		byReason[p.Reason] += p.N
		byKind[string(p.Kind)] += p.N
	}
	return domain.SortedCounts(byReason), domain.SortedCounts(byKind), nil
}

// PendingCountsWhere counts the pending suspensions f selects by reason
// and kind together, so that a page can say how many its filter matches.
// A filter of workflow and waits alone reads the counters (see
// PendingCounts); one that searches or asks for an age counts the rows
// it matches. f's reason and kind are not applied: the caller sums the
// pairs it needs, as counts of the other reasons and kinds serve as
// choices beside the filtered list.
func (db *DB) PendingCountsWhere(ctx context.Context, f domain.SuspensionFilter) ([]domain.PairCount, error) {
	var rows []struct {
		Reason string `bun:"reason"`
		Kind   string `bun:"kind"`
		N      int    `bun:"n"`
	}
	var err error
	if strings.TrimSpace(f.Search) == "" && f.SuspendedBefore.IsZero() && f.Assignee == "" && f.RunID == "" && f.StepKey == "" {
		err = db.bun.NewRaw(`SELECT reason, kind, sum(n) AS n FROM (
			SELECT workflow_id, reason, kind, n FROM suspension_counts
			UNION ALL SELECT workflow_id, reason, kind, delta FROM suspension_count_deltas
		) c WHERE ? = '' OR workflow_id = ? GROUP BY reason, kind`, f.WorkflowID, f.WorkflowID).Scan(ctx, &rows)
	} else {
		f.Status, f.Reason, f.Kind = domain.SuspensionPending, "", ""
		q := db.bun.NewSelect().TableExpr("suspensions").ColumnExpr("reason, kind, count(*) AS n").Where("NOT precompleted")
		err = suspensionsWhere(q, f).GroupExpr("reason, kind").Scan(ctx, &rows)
	}
	if err != nil {
		return nil, fmt.Errorf("count pending suspensions: %w", err)
	}
	var out []domain.PairCount
	for _, r := range rows {
		if r.N > 0 && f.Waits.Has(domain.SuspensionKind(r.Kind)) {
			out = append(out, domain.PairCount{Reason: r.Reason, Kind: domain.SuspensionKind(r.Kind), N: r.N})
		}
	}
	return out, nil
}

// CompactCounts folds PostgreSQL's pending-count deltas into the counters
// and reports how many it folded; servers call it every few seconds. It
// moves every delta in one statement (the DELETE's RETURNING feeds the
// upsert), so a concurrent reader sees each change exactly once, either as
// a delta or in its counter. Servers sharing a database take turns through
// an advisory lock. On SQLite the triggers update the counters directly.
func (db *DB) CompactCounts(ctx context.Context) (int, error) {
	if db.dialect != Postgres {
		return 0, nil
	}
	var folded int
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var mine bool
		if err := tx.NewRaw("SELECT pg_try_advisory_xact_lock(?)", countsLock).Scan(ctx, &mine); err != nil || !mine {
			return err
		}
		return tx.NewRaw(`WITH d AS (DELETE FROM suspension_count_deltas RETURNING workflow_id, reason, kind, delta),
			s AS (SELECT workflow_id, reason, kind, sum(delta) AS n, count(*) AS folded FROM d GROUP BY 1, 2, 3),
			u AS (INSERT INTO suspension_counts (workflow_id, reason, kind, n) SELECT workflow_id, reason, kind, n FROM s
				ON CONFLICT (workflow_id, reason, kind) DO UPDATE SET n = suspension_counts.n + excluded.n)
			SELECT coalesce(sum(folded), 0) FROM s`).Scan(ctx, &folded)
	})
	if err != nil {
		return 0, fmt.Errorf("compact pending counts: %w", err)
	}
	return folded, nil
}

// countsLock is the advisory lock key of CompactCounts ("tgcounts").
const countsLock int64 = 0x7467636f756e7473
