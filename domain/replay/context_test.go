package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/replay"
)

// memLog is a run's log in memory, with the store's append contract.
// failNext, if set, is what the next append returns instead of writing.
type memLog struct {
	events   []domain.Event
	failNext error
}

func (m *memLog) Events(context.Context, string) ([]domain.Event, error) {
	return slices.Clone(m.events), nil
}

func (m *memLog) AppendEvents(_ context.Context, runID string, expect int64, events []domain.NewEvent, now time.Time) error {
	if err := m.failNext; err != nil {
		m.failNext = nil
		return err
	}
	if expect != int64(len(m.events))+1 {
		return domain.ErrLogConflict
	}
	for _, e := range events {
		m.events = append(m.events, domain.Event{RunID: runID, Seq: int64(len(m.events)) + 1, Type: e.Type, Step: e.Step, Payload: e.Payload, CreatedAt: now})
	}
	return nil
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// startReq is the request of a run's first invocation.
var startReq = domain.StepRequest{RunID: "r", WorkflowID: "w", WorkflowVersion: "1", Step: replay.StepName, Start: true, RunInput: json.RawMessage(`{}`)}

// kernelStep registers handler as workflow w on log and returns the
// kernel step its invocations run as.
func kernelStep(t *testing.T, log *memLog, handler func(c *replay.Context, in struct{}) (any, error)) domain.StepFunc {
	t.Helper()
	env := &replay.Env{Store: log, Clock: fixedClock(time.Date(2026, 4, 15, 9, 0, 0, 123456789, time.FixedZone("CEST", 2*3600)))}
	reg := domain.NewRegistry()
	if err := replay.Workflow("w", "1", handler).Register(reg, env); err != nil {
		t.Fatal(err)
	}
	wf, _ := reg.Get("w", "1")
	step, _ := wf.Lookup(replay.StepName)
	return step.Func
}

// invoke runs one invocation of handler on an empty log.
func invoke(t *testing.T, handler func(c *replay.Context, in struct{}) (any, error)) (domain.StepResult, *memLog) {
	t.Helper()
	log := &memLog{}
	res, err := kernelStep(t, log, handler)(t.Context(), startReq)
	if err != nil {
		t.Fatal(err)
	}
	return res, log
}

// A log write that fails for a reason other than a lost race is the
// invocation's error, which the engine retries: the run does not fail,
// and the next invocation goes on where the log is.
func TestFailedLogWriteIsRetried(t *testing.T) {
	t.Parallel()
	busy := errors.New("database is locked")
	log := &memLog{failNext: busy}
	step := kernelStep(t, log, func(c *replay.Context, _ struct{}) (any, error) {
		return replay.Step(c, "count", func(context.Context) (int, error) { return 3, nil })
	})
	res, err := step(t.Context(), startReq)
	if !errors.Is(err, busy) {
		t.Fatalf("the invocation whose write failed: err = %v, commands = %+v; want %v", err, res.Commands, busy)
	}
	res, err = step(t.Context(), startReq)
	if err != nil || len(res.Commands) != 1 || res.Commands[0].Type != domain.CmdComplete {
		t.Fatalf("the next invocation: err = %v, commands = %+v; want it to complete", err, res.Commands)
	}
	if len(log.events) != 1 || log.events[0].Type != replay.EventStepFinished {
		t.Errorf("log = %+v, want the step's result alone", log.events)
	}
}

// A step cut short by a timeout or shutdown did not fail: nothing is
// logged for it, and the invocation returns the context's error, which
// the engine retries (or, at shutdown, gives the job back).
func TestCancelledStepIsNotAFailure(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	ctx, cancel := context.WithCancel(t.Context())
	step := kernelStep(t, log, func(c *replay.Context, _ struct{}) (any, error) {
		return replay.Step(c, "call", func(ctx context.Context) (int, error) {
			cancel() // the step timeout fires while the call is under way
			return 0, ctx.Err()
		})
	})
	res, err := step(ctx, startReq)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, commands = %+v; want %v", err, res.Commands, context.Canceled)
	}
	if len(log.events) != 0 {
		t.Errorf("log = %+v, want nothing", log.events)
	}
}

func TestInvocationEnds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		handler func(c *replay.Context, in struct{}) (any, error)
		want    domain.CommandType
		code    string
	}{
		{"a pause stands when the handler swallows it and goes on", func(c *replay.Context, _ struct{}) (any, error) {
			_, _ = replay.WaitForEvent[int](c, "go")
			return replay.Step(c, "not a valid id!", func(context.Context) (int, error) { return 1, nil })
		}, domain.CmdSuspend, ""},
		{"an output that cannot be stored errors the run", func(*replay.Context, struct{}) (any, error) {
			return make(chan int), nil
		}, domain.CmdFail, replay.CodeHandlerFailed},
		{"a step result that cannot be stored errors the run", func(c *replay.Context, _ struct{}) (any, error) {
			return replay.Step(c, "nul", func(context.Context) (string, error) { return "a\x00b", nil })
		}, domain.CmdFail, replay.CodeHandlerFailed},
		{"an approver role that is not staff errors the run", func(c *replay.Context, _ struct{}) (any, error) {
			return c.Approve(replay.ApproveOptions{Title: "ok?", Role: domain.RoleFounder})
		}, domain.CmdFail, domain.CodeValidation},
		{"an approver that is not an email errors the run", func(c *replay.Context, _ struct{}) (any, error) {
			return c.Approve(replay.ApproveOptions{Title: "ok?", Approvers: []string{"bo"}})
		}, domain.CmdFail, domain.CodeValidation},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, _ := invoke(t, tt.handler)
			if len(res.Commands) != 1 || res.Commands[0].Type != tt.want {
				t.Fatalf("commands = %+v, want one %s", res.Commands, tt.want)
			}
			if c := res.Commands[0]; tt.code != "" && (c.Error == nil || c.Error.Code != tt.code) {
				t.Fatalf("error = %+v, want code %s", c.Error, tt.code)
			}
		})
	}
}

// The first reach of Now returns what every replay will: the recorded
// millisecond, in UTC.
func TestNowOnFirstReachIsWhatReplayGets(t *testing.T) {
	t.Parallel()
	var first time.Time
	res, _ := invoke(t, func(c *replay.Context, _ struct{}) (any, error) {
		now, err := c.Now()
		first = now
		return now, err
	})
	want := time.Date(2026, 4, 15, 7, 0, 0, 123000000, time.UTC)
	if first != want {
		t.Fatalf("Now() = %v, want %v", first, want)
	}
	if len(res.Events) != 2 || res.Events[0].Type != replay.EventNowRecorded || res.Events[1].Type != replay.EventRunFinished {
		t.Fatalf("events = %+v", res.Events)
	}
}

// SetState emits each change once as a JSON Patch: the invocation that
// resumes the run rebuilds the same state from replayed results without
// emitting it again, and only changes past the log reach subscribers.
func TestStateDeltasAreEmittedOncePerChange(t *testing.T) {
	t.Parallel()
	log := &memLog{}
	var deltas []string
	env := &replay.Env{Store: log, Clock: fixedClock(time.Date(2026, 4, 15, 9, 0, 0, 0, time.UTC)),
		Observe: func(_ string, e domain.Event) {
			if e.Type == replay.EventStateDelta {
				deltas = append(deltas, string(e.Payload))
			}
		}}
	var states []map[string]json.RawMessage
	handler := func(c *replay.Context, _ struct{}) (any, error) {
		n, err := replay.Step(c, "count", func(context.Context) (int, error) { return 3, nil })
		if err != nil {
			return nil, err
		}
		if err := c.SetState("stage/name", "counted"); err != nil {
			return nil, err
		}
		if err := c.SetState("count", n); err != nil {
			return nil, err
		}
		if err := c.SetState("count", n); err != nil { // unchanged: no delta
			return nil, err
		}
		if err := c.SetState("missing", nil); err != nil { // absent: no delta
			return nil, err
		}
		if err := c.SetState("bad", make(chan int)); err == nil {
			return nil, errors.New("a value that is not JSON was taken")
		}
		if err := c.Emit("bad", make(chan int)); err == nil {
			return nil, errors.New("an event payload that is not JSON was sent")
		}
		if _, err := replay.WaitForEvent[int](c, "go"); err != nil {
			return nil, err
		}
		if err := errors.Join(c.SetState("stage/name", "resumed"), c.SetState("count", nil)); err != nil {
			return nil, err
		}
		states = append(states, c.State())
		return "done", nil
	}
	reg := domain.NewRegistry()
	if err := replay.Workflow("w", "1", handler).Register(reg, env); err != nil {
		t.Fatal(err)
	}
	wf, _ := reg.Get("w", "1")
	step, _ := wf.Lookup(replay.StepName)
	req := domain.StepRequest{RunID: "r", WorkflowID: "w", WorkflowVersion: "1", Step: replay.StepName, Start: true, RunInput: json.RawMessage(`{}`)}
	commit := func(req domain.StepRequest) domain.StepResult {
		t.Helper()
		res, err := step.Func(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		var events []domain.NewEvent
		for _, e := range res.Events {
			events = append(events, domain.NewEvent{Type: e.Type, Step: e.Step, Payload: domain.MustJSON(e.Payload)})
		}
		if err := log.AppendEvents(t.Context(), "r", res.ExpectSeq, events, time.Time{}); err != nil {
			t.Fatal(err)
		}
		return res
	}
	paused := commit(req)
	if len(paused.Commands) != 1 || paused.Commands[0].Type != domain.CmdSuspend {
		t.Fatalf("the first invocation: %+v", paused.Commands)
	}
	want := []string{
		`{"delta":[{"op":"add","path":"/stage~1name","value":"counted"}]}`,
		`{"delta":[{"op":"add","path":"/count","value":3}]}`,
	}
	if !slices.Equal(deltas, want) {
		t.Fatalf("deltas before the pause:\n got %q\nwant %q", deltas, want)
	}
	req.Start, req.Resumed = false, true
	req.Input = domain.MustJSON(map[string]any{"checkpoint": paused.Commands[0].Checkpoint,
		"resumeData": domain.SignalData{Name: "go", SignalID: "s-1", Payload: json.RawMessage(`1`)}})
	if done := commit(req); len(done.Commands) != 1 || done.Commands[0].Type != domain.CmdComplete {
		t.Fatalf("the resumed invocation: %+v", done.Commands)
	}
	want = append(want,
		`{"delta":[{"op":"replace","path":"/stage~1name","value":"resumed"}]}`,
		`{"delta":[{"op":"remove","path":"/count"}]}`)
	if !slices.Equal(deltas, want) {
		t.Errorf("deltas after the resume (replay rebuilds state silently):\n got %q\nwant %q", deltas, want)
	}
	if len(states) != 1 || string(states[0]["stage/name"]) != `"resumed"` || len(states[0]) != 1 {
		t.Errorf("State() at the end: %v", states)
	}
}
