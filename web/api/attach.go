package api

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// attachRun follows a run as server-sent events: RUN_STARTED (what the
// run is), its log from the start (or after the Last-Event-ID a
// reconnecting client sends), then RUN_PAUSED with what it awaits while it
// is suspended, and live events as they come: log entries (with their
// index as the event id), and the observability events of invocations in
// this process. The stream ends with RUN_ENDED once the run has finished.
// It is read-only: attaching never drives the run. Each heartbeat also
// reads the run again, so a lost change notification delays the stream by
// one heartbeat at most.
func (s *api) attachRun(w http.ResponseWriter, r *http.Request) error {
	user := web.PrincipalFrom(r.Context()).User
	if !user.Role.Staff() {
		return domain.ErrNotFound
	}
	release, err := s.HoldAttach(user.ID)
	if err != nil {
		return err
	}
	defer release()
	ctx, runID := r.Context(), r.PathValue("runId")
	// Subscribed before the first read, so no change falls between.
	changed, unwatch := s.WatchRun(ctx, runID)
	defer unwatch()
	var live <-chan domain.Event
	if s.Feed != nil {
		events, stop := s.Feed.Subscribe(runID)
		defer stop()
		live = events
	}
	run, err := s.Store.Run(ctx, runID)
	if err != nil {
		return err
	}
	after, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	sse := &eventStream{w: w, rc: http.NewResponseController(w)}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := sse.send("RUN_STARTED", "", map[string]any{"runId": run.ID, "workflowId": run.WorkflowID, "workflowVersion": run.WorkflowVersion,
		"input": domain.OrNull(run.Input), "createdAt": run.CreatedAt, "replayFrom": after + 1}); err != nil {
		return nil
	}
	heartbeat := time.NewTicker(cmp.Or(s.AttachHeartbeat, 15*time.Second))
	defer heartbeat.Stop()
	var paused []string // the pending suspensions last reported, to report each pause once
	for {
		// The run was read before its log, so the log sent holds every
		// entry up to the status reported after it.
		if after, err = s.sendLog(r, sse, runID, after); err != nil {
			return nil
		}
		switch {
		case run.Status.Terminal():
			_ = sse.send("RUN_ENDED", "", map[string]any{"runId": run.ID, "status": run.Status, "output": domain.OrNull(run.Output), "error": run.Error})
			return nil
		case run.Status == domain.RunSuspended:
			if paused, err = s.sendPause(r, sse, run, paused); err != nil {
				return nil
			}
		default:
			paused = nil
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-s.Closing(): // shutting down: the client reconnects elsewhere, from its Last-Event-ID
				return nil
			case <-changed:
				break wait
			case e := <-live:
				if err := sse.send(e.Type, "", web.EventView(e)); err != nil {
					return nil
				}
			case <-heartbeat.C:
				if err := sse.comment("heartbeat"); err != nil {
					return nil
				}
				break wait
			}
		}
		if run, err = s.Store.Run(ctx, runID); err != nil {
			return nil // the client left, or the database failed mid-stream: the client reconnects
		}
		// An invocation publishes its live events before it commits, so
		// those of every commit the run just read are queued by now: send
		// them before the log entries and the pause or end they led to.
		if err := sendQueued(sse, live); err != nil {
			return nil
		}
	}
}

// sendQueued sends the live events waiting on the channel, without
// waiting for more.
func sendQueued(sse *eventStream, live <-chan domain.Event) error {
	for {
		select {
		case e := <-live:
			if err := sse.send(e.Type, "", web.EventView(e)); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// sendPause sends RUN_PAUSED with what the suspended run awaits, unless
// its pending suspensions are the ones reported last (paused, their ids),
// and returns the ids reported. A notification can stand for several
// commits: the run may have resumed and paused again since the last look.
func (s *api) sendPause(r *http.Request, sse *eventStream, run domain.Run, paused []string) ([]string, error) {
	pending, err := s.PendingWaits(r.Context(), run.ID)
	if err != nil {
		return paused, err
	}
	waits, waitingFor, approval := web.WaitsOf(pending)
	ids := make([]string, len(waits))
	for i, a := range waits {
		ids[i] = a.SuspensionID
	}
	if slices.Equal(ids, paused) {
		return paused, nil
	}
	return ids, sse.send("RUN_PAUSED", "", pausedJSON{RunID: run.ID, Status: run.Status, Awaiting: waits, WaitingFor: waitingFor, PendingApproval: approval})
}

// pausedJSON is a RUN_PAUSED event: what the run awaits, as GET
// /api/v1/runs/{id} shows it.
type pausedJSON struct {
	RunID           string                   `json:"runId"`
	Status          domain.RunStatus         `json:"status"`
	Awaiting        []web.AwaitJSON          `json:"awaiting"`
	WaitingFor      *web.WaitingForJSON      `json:"waitingFor,omitempty"`
	PendingApproval *web.PendingApprovalJSON `json:"pendingApproval,omitempty"`
}

// sendLog sends the run's log entries after index after and returns the
// last index sent.
func (s *api) sendLog(r *http.Request, sse *eventStream, runID string, after int64) (int64, error) {
	events, err := s.Store.Events(r.Context(), runID)
	if err != nil {
		return after, err
	}
	for _, e := range events {
		if e.Seq <= after {
			continue
		}
		if err := sse.send(e.Type, strconv.FormatInt(e.Seq, 10), web.EventView(e)); err != nil {
			return after, err
		}
		after = e.Seq
	}
	return after, nil
}

// eventStream writes server-sent events, each flushed at once and each
// with a write deadline of its own (the server's WriteTimeout would end a
// long stream).
type eventStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *eventStream) send(event, id string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if id != "" {
		return s.write(fmt.Sprintf("id: %s\nevent: %s\ndata: %s\n\n", id, event, b))
	}
	return s.write(fmt.Sprintf("event: %s\ndata: %s\n\n", event, b))
}

func (s *eventStream) comment(text string) error { return s.write(": " + text + "\n\n") }

func (s *eventStream) write(chunk string) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(web.LiveWriteWait))
	if _, err := s.w.Write([]byte(chunk)); err != nil {
		return err
	}
	return s.rc.Flush()
}
