package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Wait returns the run once it is in one of statuses (any finished status
// when none are given). It follows the run's event stream
// (GET /api/v1/runs/{id}/attach) rather than polling: the stream says when
// the run pauses or ends, and Wait then reads the run. A stream cut short
// (a server restarting) is opened again where it left off. Wait returns
// when ctx ends, with its error.
func (c *Client) Wait(ctx context.Context, runID string, statuses ...string) (Run, error) {
	want := func(status string) bool {
		if len(statuses) == 0 {
			return Terminal(status)
		}
		return slices.Contains(statuses, status)
	}
	lastID := ""
	for {
		run, err := c.GetRun(ctx, runID)
		if err != nil {
			return Run{}, err
		}
		if want(run.Status) {
			return run, nil
		}
		if Terminal(run.Status) && !slices.Contains(statuses, RunRunning) {
			return run, fmt.Errorf("run %s is %s and will not become %s", runID, run.Status, strings.Join(statuses, " or "))
		}
		lastID, err = c.follow(ctx, runID, lastID, want)
		if ctx.Err() != nil {
			return Run{}, ctx.Err()
		}
		if err != nil {
			if p, ok := err.(*Problem); ok {
				return Run{}, p
			}
			// The stream broke: wait a moment, then read the run again.
			select {
			case <-ctx.Done():
				return Run{}, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// StreamEvent is one event of a run's stream: a log entry (ID is its
// index in the log), or RUN_STARTED, RUN_PAUSED (what the run awaits) and
// RUN_ENDED (how it ended).
type StreamEvent struct {
	Type string
	ID   string
	Data json.RawMessage
}

// Attach follows a run's event stream from the start of its log (or after
// the entry lastID names), calling fn with each event until fn returns
// false, the run ends (after RUN_ENDED is passed on), or ctx ends. It
// returns the id of the last log entry seen; a stream cut short is an
// error, and attaching again with that id goes on where it stopped.
func (c *Client) Attach(ctx context.Context, runID, lastID string, fn func(StreamEvent) bool) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := c.open(ctx, "GET", "/api/v1/runs/"+url.PathEscape(runID)+"/attach", nil, nil, "", accept("text/event-stream"), func(r *http.Request) {
		if lastID != "" {
			r.Header.Set("Last-Event-ID", lastID)
		}
	})
	if err != nil {
		return lastID, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ev StreamEvent
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Type != "" {
				if ev.ID != "" {
					lastID = ev.ID
				}
				ev.Data = json.RawMessage(data.String())
				if !fn(ev) || ev.Type == "RUN_ENDED" {
					return lastID, nil
				}
			}
			ev = StreamEvent{}
			data.Reset()
		case strings.HasPrefix(line, "event:"):
			ev.Type = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "id:"):
			ev.ID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return lastID, err
	}
	return lastID, fmt.Errorf("the event stream of run %s ended before the run did", runID)
}

// follow reads the run's stream until an event says the run may be in a
// wanted status: it paused, ended, or was taken up again.
func (c *Client) follow(ctx context.Context, runID, lastID string, want func(string) bool) (string, error) {
	return c.Attach(ctx, runID, lastID, func(ev StreamEvent) bool {
		var p struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(ev.Data, &p)
		switch ev.Type {
		case "RUN_PAUSED":
			return !want(p.Status)
		case "RUN_RESUMED", "RUN_RETRIED":
			return !want(RunRunning)
		}
		return true
	})
}
