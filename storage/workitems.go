package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type workItemRow struct {
	bun.BaseModel `bun:"table:work_items,alias:wi"`

	ID           string           `bun:"id,pk"`
	RunID        string           `bun:"run_id"`
	WorkflowID   string           `bun:"workflow_id"`
	StepName     string           `bun:"step_name"`
	ExecutionKey string           `bun:"execution_key"`
	TokenHash    []byte           `bun:"token_hash"`
	State        domain.WorkState `bun:"state"`
	Dispatch     int              `bun:"dispatch"`
	WaitKey      string           `bun:"wait_key"`
	Result       json.RawMessage  `bun:"result,type:jsonb,nullzero"`
	CreatedAt    time.Time        `bun:"created_at"`
	UpdatedAt    time.Time        `bun:"updated_at"`
}

func (r *workItemRow) toDomain() (domain.WorkItem, error) {
	w := domain.WorkItem{
		ID: r.ID, RunID: r.RunID, WorkflowID: r.WorkflowID, StepName: r.StepName, ExecutionKey: r.ExecutionKey,
		TokenHash: r.TokenHash, State: r.State, Dispatch: r.Dispatch, WaitKey: r.WaitKey,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if len(r.Result) > 0 {
		w.Result = new(domain.StepOutcome)
		if err := json.Unmarshal(r.Result, w.Result); err != nil {
			return w, fmt.Errorf("decode result of work item %s: %w", r.ID, err)
		}
	}
	return w, nil
}

// StartWorkItem implements domain.WorkItemStore.
func (db *DB) StartWorkItem(ctx context.Context, w domain.WorkItem) (domain.WorkItem, error) {
	now := ts(w.CreatedAt)
	row := &workItemRow{
		ID: w.ID, RunID: w.RunID, WorkflowID: w.WorkflowID, StepName: w.StepName, ExecutionKey: w.ExecutionKey,
		TokenHash: w.TokenHash, State: domain.WorkActive, Dispatch: 1, WaitKey: w.WaitKey, CreatedAt: now, UpdatedAt: now,
	}
	if _, err := db.bun.NewInsert().Model(row).On("CONFLICT (run_id, execution_key) DO NOTHING").Exec(ctx); err != nil {
		return domain.WorkItem{}, fmt.Errorf("start work item of run %s: %w", w.RunID, translate(err))
	}
	existing := new(workItemRow)
	if err := db.bun.NewSelect().Model(existing).Where("run_id = ? AND execution_key = ?", w.RunID, w.ExecutionKey).Scan(ctx); err != nil {
		return domain.WorkItem{}, fmt.Errorf("read work item of run %s: %w", w.RunID, translate(err))
	}
	return existing.toDomain()
}

// WorkItem implements domain.WorkItemStore.
func (db *DB) WorkItem(ctx context.Context, id string) (domain.WorkItem, error) {
	row := new(workItemRow)
	if err := db.bun.NewSelect().Model(row).Where("id = ?", id).Scan(ctx); err != nil {
		return domain.WorkItem{}, fmt.Errorf("work item %s: %w", id, translate(err))
	}
	return row.toDomain()
}

// WorkItemByToken implements domain.WorkItemStore with one read on the
// unique index of token hashes, the one a report's own lookup uses.
func (db *DB) WorkItemByToken(ctx context.Context, workflowID, stepName string, tokenHash []byte) (domain.WorkItem, error) {
	row := new(workItemRow)
	err := db.bun.NewSelect().Model(row).Where("token_hash = ? AND workflow_id = ? AND step_name = ?", tokenHash, workflowID, stepName).Scan(ctx)
	if err != nil {
		return domain.WorkItem{}, fmt.Errorf("work item of step %s/%s by token: %w", workflowID, stepName, translate(err))
	}
	return row.toDomain()
}

// MoveWorkItem implements domain.WorkItemStore with one conditional
// update: of a step moving the item and a completion arriving, exactly one
// changes it first, and the other sees what it did.
func (db *DB) MoveWorkItem(ctx context.Context, id string, from []domain.WorkState, to domain.WorkState, dispatch int, waitKey string, result *domain.StepOutcome, now time.Time) (domain.WorkItem, bool, error) {
	var rows []workItemRow
	q := db.bun.NewUpdate().Model(&rows).Set("state = ?", to).Set("dispatch = ?", dispatch).Set("wait_key = ?", waitKey).
		Set("updated_at = ?", ts(now)).Where("id = ? AND state IN (?)", id, bun.List(from)).Returning("*")
	if result != nil {
		q.Set("result = ?", domain.MustJSON(result))
	}
	if err := q.Scan(ctx); err != nil && !isNoRows(err) {
		return domain.WorkItem{}, false, fmt.Errorf("move work item %s: %w", id, translate(err))
	}
	if len(rows) == 1 {
		w, err := rows[0].toDomain()
		return w, true, err
	}
	w, err := db.WorkItem(ctx, id)
	return w, false, err
}

// completeWorkItem applies a report (domain.Transition's Report) alone: it
// records an endpoint's report for the item with the given token hash and
// resumes the pause waiting for it, in one transaction, as the item's
// DecideReport decides. A refused report fails with its
// *WorkStateError, after the change DecideReport asks for (if any) has
// committed. The engine's ReportWork is the only way in. The item's run is
// locked, then the item, in the order of every writer (job, run, then what
// the run holds), so a report racing a deletion waits instead of
// deadlocking. domain.WorkItem.DecideReport decides (under the locks, so
// that a report sees every report and every cancellation committed before
// it) what the report does; the item's change and the resume of the pause
// named by its wait key (or, when that pause has not committed yet, a
// pre-completed resume kept for it) commit in one transaction. A pause a
// timeout has already resumed is left as it is: the step reads the item's
// state when it runs. A refused report that still changed the item (its
// run had ended) returns its refusal after that change has committed.
func (db *DB) completeWorkItem(ctx context.Context, r domain.WorkReport) (domain.WorkItem, error) {
	var out domain.WorkItem
	var refused error
	var after func()
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) (err error) {
		out, refused, after, err = db.completeWorkIn(ctx, tx, r)
		return err
	})
	if err != nil {
		return out, describeReport(err)
	}
	after()
	if refused != nil {
		return out, describeReport(refused)
	}
	return out, nil
}

func describeReport(err error) error {
	return fmt.Errorf("complete work item: %w", translate(err))
}

// completeWorkIn is completeWorkItem inside a transaction. A report the
// item's state refuses still commits what DecideReport asks for (a run that
// ended fails its item): it comes back as refused, with err nil. after is
// what to do once the transaction has committed.
func (db *DB) completeWorkIn(ctx context.Context, tx bun.Tx, r domain.WorkReport) (out domain.WorkItem, refused error, after func(), err error) {
	r.Handoff.Reset() // an earlier try of this transaction was rolled back
	now := ts(r.Now)
	item, runStatus, err := db.lockWorkItem(ctx, tx, r)
	if err != nil {
		return out, nil, nil, err
	}
	v := item.DecideReport(r.Outcome, runStatus, now)
	if !v.Changed {
		return out, nil, nil, v.Err
	}
	out = v.Item
	row := &workItemRow{ID: out.ID, State: out.State, Result: domain.MustJSON(out.Result), UpdatedAt: out.UpdatedAt}
	if _, err := tx.NewUpdate().Model(row).Column("state", "result", "updated_at").WherePK().Exec(ctx); err != nil {
		return out, nil, nil, err
	}
	if !v.Resume {
		return out, v.Err, func() { db.changed(out.RunID) }, nil
	}
	_, err = db.resumeIn(ctx, tx, domain.ResumeRequest{RunID: item.RunID, StepKey: item.WaitKey, Data: domain.MustJSON(r.Outcome), By: "webhook", Now: now, Handoff: r.Handoff})
	if ce, ok := errors.AsType[*domain.ConflictError](err); ok && ce.Code == domain.CodeAlreadyResumed {
		err = nil
	}
	return out, nil, func() {
		db.changed(out.RunID)
		db.wakeUnlessHandedOff(r.Handoff)
	}, err
}

// lockWorkItem reads the reported work item and its run's status, locking
// the run and then the item on PostgreSQL.
func (db *DB) lockWorkItem(ctx context.Context, tx bun.Tx, r domain.WorkReport) (domain.WorkItem, domain.RunStatus, error) {
	mine := func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("token_hash = ? AND workflow_id = ? AND step_name = ?", r.TokenHash, r.WorkflowID, r.StepName)
	}
	run := new(runRow)
	runQ := tx.NewSelect().Model(run).Column("id", "status").
		Where("id = (?)", mine(tx.NewSelect().Model((*workItemRow)(nil)).Column("run_id")))
	row := new(workItemRow)
	q := mine(tx.NewSelect().Model(row))
	if db.dialect == Postgres {
		runQ.For("UPDATE")
		q.For("UPDATE")
	}
	if err := runQ.Scan(ctx); err != nil {
		return domain.WorkItem{}, "", translate(err)
	}
	if err := q.Scan(ctx); err != nil {
		return domain.WorkItem{}, "", translate(err)
	}
	item, err := row.toDomain()
	return item, run.Status, err
}

var _ domain.WorkItemStore = (*DB)(nil)
