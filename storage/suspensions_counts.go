package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
)

// PendingCounts counts pending suspensions by reason and by kind, within the
// filter's workflow and assignee (its reason and kind are ignored, so each
// count says what choosing it would show).
func (db *DB) PendingCounts(ctx context.Context, f domain.SuspensionFilter) (reasons, kinds []domain.GroupCount, err error) {
	var rows []struct {
		Reason string `bun:"reason"`
		Kind   string `bun:"kind"`
		N      int    `bun:"n"`
	}
	q := db.bun.NewSelect().Model((*suspensionRow)(nil)).ColumnExpr("reason, kind, count(*) AS n").
		Where("status = ? AND NOT precompleted", domain.SuspensionPending).GroupExpr("reason, kind")
	if f.WorkflowID != "" {
		q.Where("workflow_id = ?", f.WorkflowID)
	}
	if f.Assignee != "" {
		q.Where("lower(assignee) = ?", strings.ToLower(f.Assignee))
	}
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, nil, fmt.Errorf("count pending suspensions: %w", err)
	}
	byReason, byKind := map[string]int{}, map[string]int{}
	for _, r := range rows {
		byReason[r.Reason] += r.N
		byKind[r.Kind] += r.N
	}
	return sortedCounts(byReason), sortedCounts(byKind), nil
}

// sortedCounts orders groups largest first, then by name.
func sortedCounts(m map[string]int) []domain.GroupCount {
	out := make([]domain.GroupCount, 0, len(m))
	for k, n := range m {
		out = append(out, domain.GroupCount{Name: k, N: n})
	}
	slices.SortFunc(out, func(a, b domain.GroupCount) int {
		if a.N != b.N {
			return b.N - a.N
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}
