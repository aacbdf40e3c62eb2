package storage

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// SuspensionTitles returns, by id, the titles of those of the suspensions
// named that still exist, in one query: the audit log names the requests
// its entries refer to.
func (db *DB) SuspensionTitles(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID    string `bun:"id"`
		Title string `bun:"title"`
	}
	if err := db.bun.NewSelect().Model((*suspensionRow)(nil)).Column("id", "title").Where("id IN (?)", bun.List(ids)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("suspension titles: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.Title
	}
	return out, nil
}
