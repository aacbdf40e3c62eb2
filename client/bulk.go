package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// BulkResult is one item's fate in a bulk action: OK with its status
// afterwards, or the problem's code and detail.
type BulkResult struct {
	ID     string `json:"id"`
	OK     bool   `json:"ok"`
	Status string `json:"status,omitempty"`
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// BulkSummary ends a bulk action: how many items it acted on, and whether
// a filter matched more than it takes (Truncated) or stopped (Error).
type BulkSummary struct {
	Done      int    `json:"done"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	Truncated bool   `json:"truncated,omitempty"`
	Error     string `json:"error,omitempty"`
}

// SuspensionBulk approves or rejects many suspensions: those IDs names, or
// those Filter matches (pending ones unless its Status says otherwise).
type SuspensionBulk struct {
	Action  string               `json:"action"` // approve or reject
	Comment string               `json:"comment,omitempty"`
	IDs     []string             `json:"ids,omitempty"`
	Filter  *SuspensionSelection `json:"filter,omitempty"`
}

// SuspensionSelection selects suspensions for a bulk action, as
// ListSuspensions' filter does.
type SuspensionSelection struct {
	Status     string `json:"status,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Kind       string `json:"kind,omitempty"`
	WorkflowID string `json:"workflowId,omitempty"`
	RunID      string `json:"runId,omitempty"`
}

// RunBulk cancels or retries many runs: those IDs names, or those Filter
// matches.
type RunBulk struct {
	Action string   `json:"action"` // cancel or retry
	Reason string   `json:"reason,omitempty"`
	IDs    []string `json:"ids,omitempty"`
	// Filter selects runs as ListRuns does; its Cursor and Limit are a
	// page's and are not sent.
	Filter *RunFilter `json:"filter,omitempty"`
}

// MarshalJSON writes f as a bulk action's filter.
func (f RunFilter) MarshalJSON() ([]byte, error) {
	orNil := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	return json.Marshal(struct {
		Status        []string   `json:"status,omitempty"`
		WorkflowID    string     `json:"workflowId,omitempty"`
		Query         string     `json:"q,omitempty"`
		CreatedAfter  *time.Time `json:"createdAfter,omitempty"`
		CreatedBefore *time.Time `json:"createdBefore,omitempty"`
	}{f.Statuses, f.WorkflowID, f.Query, orNil(f.CreatedAfter), orNil(f.CreatedBefore)})
}

// BulkSuspensions acts on many suspensions, calling each (if not nil) with
// every item's result as the server reports it.
func (c *Client) BulkSuspensions(ctx context.Context, b SuspensionBulk, each func(BulkResult)) (BulkSummary, error) {
	return c.bulk(ctx, "/api/v1/suspensions/bulk", b, each)
}

// BulkRuns acts on many runs, calling each (if not nil) with every item's
// result as the server reports it.
func (c *Client) BulkRuns(ctx context.Context, b RunBulk, each func(BulkResult)) (BulkSummary, error) {
	return c.bulk(ctx, "/api/v1/runs/bulk", b, each)
}

func (c *Client) bulk(ctx context.Context, path string, body any, each func(BulkResult)) (BulkSummary, error) {
	resp, err := c.stream(ctx, "POST", path, nil, body)
	if err != nil {
		return BulkSummary{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			BulkResult
			BulkSummary
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return BulkSummary{}, fmt.Errorf("read the bulk action's answer: %w", err)
		}
		if line.ID == "" {
			return line.BulkSummary, nil
		}
		if each != nil {
			each(line.BulkResult)
		}
	}
	if err := sc.Err(); err != nil {
		return BulkSummary{}, err
	}
	return BulkSummary{}, errors.New("the bulk action's answer ended before its summary")
}
