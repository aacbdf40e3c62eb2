package client

import (
	"context"
	"iter"
)

// Each yields every item of a list, reading its pages one after another
// as the loop goes: list reads the page after cursor ("" for the first).
// An error ends the items, yielded with the zero item.
//
//	for run, err := range client.Each(func(cursor string) (client.Page[client.Run], error) {
//		return c.ListRuns(ctx, client.RunFilter{Statuses: []string{"failed"}, Cursor: cursor})
//	}) { … }
func Each[T any](list func(cursor string) (Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := ""
		for {
			p, err := list(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range p.Items {
				if !yield(item, nil) {
					return
				}
			}
			if cursor = p.NextCursor; cursor == "" {
				return
			}
		}
	}
}

// AllRuns yields every run f selects (its Cursor aside), newest first, a
// page of f.Limit (50 by default) at a time.
func (c *Client) AllRuns(ctx context.Context, f RunFilter) iter.Seq2[Run, error] {
	return Each(func(cursor string) (Page[Run], error) {
		f.Cursor = cursor
		return c.ListRuns(ctx, f)
	})
}

// AllSuspensions yields every suspension f selects (its Cursor aside), a
// page of f.Limit at a time.
func (c *Client) AllSuspensions(ctx context.Context, f SuspensionFilter) iter.Seq2[Suspension, error] {
	return Each(func(cursor string) (Page[Suspension], error) {
		f.Cursor = cursor
		return c.ListSuspensions(ctx, f)
	})
}
