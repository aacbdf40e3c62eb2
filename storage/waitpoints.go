package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type waitpointRow struct {
	bun.BaseModel `bun:"table:waitpoints,alias:w"`

	ID             string               `bun:"id,pk"`
	RunID          string               `bun:"run_id"`
	StepName       string               `bun:"step_name"`
	ExecutionKey   string               `bun:"execution_key"`
	Type           domain.WaitpointType `bun:"type"`
	TokenHash      []byte               `bun:"token_hash"`
	ResumeAt       *time.Time           `bun:"resume_at"`
	ResponseToSend json.RawMessage      `bun:"response_to_send,type:jsonb,nullzero"`
	CreatedAt      time.Time            `bun:"created_at"`

	// The pause's status, from the suspension keyed by the waitpoint's id.
	PauseStatus  *string `bun:"pause_status,scanonly"`
	Precompleted *bool   `bun:"pause_precompleted,scanonly"`
}

func (r *waitpointRow) toDomain() (domain.Waitpoint, error) {
	w := domain.Waitpoint{
		ID: r.ID, RunID: r.RunID, StepName: r.StepName, ExecutionKey: r.ExecutionKey, Type: r.Type,
		TokenHash: r.TokenHash, ResumeAt: utcPtr(r.ResumeAt), CreatedAt: r.CreatedAt.UTC(), Status: domain.WaitpointPending,
	}
	if len(r.ResponseToSend) > 0 {
		w.ResponseToSend = new(domain.HTTPResponse)
		if err := json.Unmarshal(r.ResponseToSend, w.ResponseToSend); err != nil {
			return w, fmt.Errorf("decode response of waitpoint %s: %w", r.ID, err)
		}
	}
	if r.PauseStatus != nil && *r.PauseStatus == string(domain.SuspensionResumed) {
		w.Status = domain.WaitpointCompleted
	}
	w.Paused = r.PauseStatus != nil && (r.Precompleted == nil || !*r.Precompleted)
	return w, nil
}

// CreateWaitpoint implements domain.WaitpointStore: one waitpoint per
// step execution, so a retried attempt gets the first one back.
func (db *DB) CreateWaitpoint(ctx context.Context, w domain.Waitpoint) (domain.Waitpoint, error) {
	row := &waitpointRow{
		ID: w.ID, RunID: w.RunID, StepName: w.StepName, ExecutionKey: w.ExecutionKey, Type: w.Type,
		TokenHash: w.TokenHash, ResumeAt: w.ResumeAt, CreatedAt: ts(w.CreatedAt),
	}
	if row.ResumeAt != nil {
		at := ts(*row.ResumeAt)
		row.ResumeAt = &at
	}
	if w.ResponseToSend != nil {
		row.ResponseToSend = domain.MustJSON(w.ResponseToSend)
	}
	if _, err := db.bun.NewInsert().Model(row).On("CONFLICT (run_id, execution_key) DO NOTHING").Exec(ctx); err != nil {
		return domain.Waitpoint{}, fmt.Errorf("create waitpoint of run %s: %w", w.RunID, translate(err))
	}
	return db.oneWaitpoint(ctx, "read waitpoint of run "+w.RunID, "w.run_id = ? AND w.execution_key = ?", w.RunID, w.ExecutionKey)
}

// Waitpoint implements domain.WaitpointStore.
func (db *DB) Waitpoint(ctx context.Context, runID, id string) (domain.Waitpoint, error) {
	return db.oneWaitpoint(ctx, "waitpoint "+id, "w.run_id = ? AND w.id = ?", runID, id)
}

// oneWaitpoint reads the waitpoint where selects, or ErrNotFound; what
// names it in errors.
func (db *DB) oneWaitpoint(ctx context.Context, what, where string, args ...any) (domain.Waitpoint, error) {
	row := new(waitpointRow) // at most one: the join is on the suspension's unique key
	if err := db.waitpoints().Where(where, args...).Scan(ctx, row); err != nil {
		return domain.Waitpoint{}, fmt.Errorf("%s: %w", what, translate(err))
	}
	return row.toDomain()
}

// Waitpoints implements domain.WaitpointStore.
func (db *DB) Waitpoints(ctx context.Context, runID string) ([]domain.Waitpoint, error) {
	var rows []waitpointRow
	if err := db.waitpoints().Where("w.run_id = ?", runID).OrderExpr("w.created_at, w.id").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("waitpoints of run %s: %w", runID, translate(err))
	}
	out := make([]domain.Waitpoint, len(rows))
	for i := range rows {
		var err error
		if out[i], err = rows[i].toDomain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// waitpoints selects waitpoints with the status of their pause.
func (db *DB) waitpoints() *bun.SelectQuery {
	return db.bun.NewSelect().Model((*waitpointRow)(nil)).ColumnExpr("w.*").
		ColumnExpr("s.status AS pause_status, s.precompleted AS pause_precompleted").
		Join("LEFT JOIN suspensions AS s ON s.run_id = w.run_id AND s.step_key = w.id")
}

var _ domain.WaitpointStore = (*DB)(nil)
