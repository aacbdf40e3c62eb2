package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain/flow"
)

type definitionRow struct {
	bun.BaseModel `bun:"table:workflow_definitions,alias:wd"`

	WorkflowID string    `bun:"workflow_id,pk"`
	Version    string    `bun:"version,pk"`
	Body       string    `bun:"body"`
	CreatedBy  string    `bun:"created_by"`
	CreatedAt  time.Time `bun:"created_at"`
}

func (r definitionRow) toFlow() flow.Definition {
	return flow.Definition{WorkflowID: r.WorkflowID, Version: r.Version, Body: []byte(r.Body), CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC()}
}

func definitionRowFrom(d flow.Definition) *definitionRow {
	return &definitionRow{WorkflowID: d.WorkflowID, Version: d.Version, Body: string(d.Body), CreatedBy: d.CreatedBy, CreatedAt: ts(d.CreatedAt)}
}

// SaveDefinition implements flow.Store: the first registration of a
// version wins; later ones get it back with created=false.
func (db *DB) SaveDefinition(ctx context.Context, d flow.Definition) (flow.Definition, bool, error) {
	row := definitionRowFrom(d)
	res, err := db.bun.NewInsert().Model(row).On("CONFLICT (workflow_id, version) DO NOTHING").Exec(ctx)
	if err != nil {
		return flow.Definition{}, false, fmt.Errorf("save workflow %s version %s: %w", d.WorkflowID, d.Version, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return row.toFlow(), true, nil
	}
	existing, err := db.Definition(ctx, d.WorkflowID, d.Version)
	return existing, false, err
}

// ReplaceDefinition implements flow.Store. Definitions refuse updates, so
// the old row is deleted, on the condition that it is unchanged, and next
// inserted in the same transaction.
func (db *DB) ReplaceDefinition(ctx context.Context, old, next flow.Definition) (bool, error) {
	replaced := false
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		replaced = false
		res, err := tx.NewDelete().Model((*definitionRow)(nil)).
			Where("workflow_id = ? AND version = ? AND body = ? AND created_by = ?", old.WorkflowID, old.Version, string(old.Body), old.CreatedBy).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		if _, err := tx.NewInsert().Model(definitionRowFrom(next)).Exec(ctx); err != nil {
			return err
		}
		replaced = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("replace workflow %s version %s: %w", old.WorkflowID, old.Version, err)
	}
	return replaced, nil
}

// Definition implements flow.Store; an empty version means the latest
// registered.
func (db *DB) Definition(ctx context.Context, workflowID, version string) (flow.Definition, error) {
	row := new(definitionRow)
	q := db.bun.NewSelect().Model(row).Where("workflow_id = ?", workflowID)
	if version != "" {
		q.Where("version = ?", version)
	} else {
		q.OrderExpr("created_at DESC, version DESC").Limit(1)
	}
	if err := q.Scan(ctx); err != nil {
		return flow.Definition{}, fmt.Errorf("workflow %s version %q: %w", workflowID, version, translate(err))
	}
	return row.toFlow(), nil
}

// Definitions implements flow.Store: every version, by workflow and then
// in the order they were registered.
func (db *DB) Definitions(ctx context.Context) ([]flow.Definition, error) {
	var rows []definitionRow
	if err := db.bun.NewSelect().Model(&rows).OrderExpr("workflow_id, created_at, version").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list workflow definitions: %w", err)
	}
	out := make([]flow.Definition, len(rows))
	for i, r := range rows {
		out[i] = r.toFlow()
	}
	return out, nil
}
