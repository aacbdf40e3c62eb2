package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
)

// Context is what a replay handler gets: a context.Context for the
// invocation, and the durable primitives. Every call of a primitive is
// matched against the run's log by its durable id; recorded results come
// back without running anything again.
type Context struct {
	context.Context
	RunID           string
	WorkflowID      string
	WorkflowVersion string

	env     *Env
	hist    *history
	pos     int            // primitives reached so far
	counts  map[string]int // positional ids, per primitive
	pending []domain.NewEvent
	pause   *pause
	stop    error // set once the invocation cannot go on: pause, conflict, nondeterminism
	logErr  error // a log write that failed: the invocation's error, not the run's
	state   map[string]json.RawMessage
}

// pause is the wait an invocation stopped at.
type pause struct {
	StepID   string                `json:"stepId"`
	Kind     domain.SuspensionKind `json:"kind"`
	Name     string                `json:"name,omitempty"` // signal name
	Deadline *time.Time            `json:"deadline,omitempty"`
	Approval *ApproveOptions       `json:"approval,omitempty"`
	// Group and Branches: a wait on several things (Any, All).
	Group    domain.GroupMode `json:"group,omitempty"`
	Branches []Wait           `json:"branches,omitempty"`
	// presentation is how people see a signal wait; it goes on the
	// suspension, not into the checkpoint.
	presentation *domain.Presentation
}

// ErrPaused is returned by a primitive that waits for something not in the
// log yet. Return it (or any error wrapping it) from the handler: the run
// pauses there and the handler runs again from the top when the wait
// resolves. A handler that swallows it pauses all the same.
var ErrPaused = errors.New("replay: the run pauses here")

// StepError is a failure recorded in the log: replay returns it again, with
// its original message and code.
type StepError struct {
	StepID  string `json:"stepId,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %s failed (%s): %s", e.StepID, e.Code, e.Message)
}

// ErrTimeout is returned by WaitForEvent when its deadline passed first.
var ErrTimeout = errors.New("replay: the wait's deadline passed before the event came")

// Option sets a primitive's explicit durable id (and, for WaitForEvent,
// its deadline and presentation).
type Option func(*options)

type options struct {
	id           string
	timeout      time.Duration
	deadline     time.Time
	presentation *domain.Presentation
}

// WithID gives a primitive an explicit durable id. Without one the id is
// positional (__now-0, __uuid-1, __wait-payment-0, __timer-0, …): stable
// as long as the handler reaches the same primitives in the same order.
func WithID(id string) Option { return func(o *options) { o.id = id } }

// Timeout bounds a WaitForEvent from when it is first reached.
func Timeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// Deadline bounds a WaitForEvent by an absolute time.
func Deadline(t time.Time) Option { return func(o *options) { o.deadline = t } }

// WithPresentation sets how people see a WaitForEvent's suspension: its
// title, fields and reason label (see domain.Presentation). It is fixed
// when the wait is first reached and the run pauses there.
func WithPresentation(p domain.Presentation) Option {
	return func(o *options) { o.presentation = &p }
}

func optionsOf(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// reserved starts the ids and signal names replay makes up itself.
const reserved = "__"

// reach checks the next primitive against the log: at a position the log
// has seen, the handler must reach the same primitive with the same id.
// It returns the log's record for the id, if any.
func (c *Context) reach(kind primitive, id, positional string) (string, *record, error) {
	if c.stop != nil {
		return "", nil, c.stop
	}
	if strings.HasPrefix(id, reserved) {
		return "", nil, c.halt(&StepError{Code: domain.CodeValidation, Message: fmt.Sprintf(
			"%s(%q): ids starting with %q are the positional ids replay generates; choose another", kind, id, reserved)})
	}
	if id == "" {
		n := c.counts[positional]
		c.counts[positional] = n + 1
		id = positional + "-" + strconv.Itoa(n)
	}
	got := call{kind: kind, id: id}
	p := c.pos
	c.pos++
	r := c.hist.byID[id]
	switch {
	case p < len(c.hist.order) && c.hist.order[p] != got:
		return "", nil, c.halt(&StepError{Code: CodeNondeterminism, Message: fmt.Sprintf(
			"replay reached %s at position %d, where the log has %s: the handler must reach the same primitives in the same order on every replay", got, p, c.hist.order[p])})
	case p >= len(c.hist.order) && r != nil:
		return "", nil, c.halt(&StepError{Code: CodeNondeterminism, Message: fmt.Sprintf(
			"replay reached %s at position %d, but that id was used earlier in the run: durable ids are unique", got, p)})
	}
	return id, r, nil
}

// halt stops the invocation for good with err, unless it has stopped
// already: a pause or a lost race that came first stands, as it does for
// every primitive reached after it. The run fails with err, unless a log
// write failed or the context was cancelled (see invoke).
func (c *Context) halt(err error) error {
	if c.stop == nil {
		c.stop = err
	}
	return c.stop
}

// suspend stops the invocation at the wait p: the run pauses there.
func (c *Context) suspend(p *pause) error {
	c.pause = p
	c.stop = ErrPaused
	return ErrPaused
}

// record queues a log entry; it is written with the next append or the
// invocation's commit. It counts as logged from now on, so an id reached
// twice in one invocation is caught as it would be on replay.
func (c *Context) record(typ, stepID string, payload any) {
	e := domain.NewEvent{Type: typ, Step: stepID, Payload: domain.MustJSON(payload)}
	c.pending = append(c.pending, e)
	c.hist.add(&domain.Event{RunID: c.RunID, Type: e.Type, Step: e.Step, Payload: e.Payload})
}

// flush appends the queued entries at the log's next index. A write that
// fails (a race lost to another writer, a database that is busy) stops the
// invocation without failing the run; the driver runs it again.
func (c *Context) flush() error {
	if len(c.pending) == 0 {
		return nil
	}
	if err := c.env.Store.AppendEvents(c, c.RunID, c.hist.next, c.pending, c.env.now()); err != nil {
		c.logErr = err
		return c.halt(err)
	}
	c.hist.next += int64(len(c.pending))
	c.pending = c.pending[:0]
	return nil
}

// Emit sends an observability-only CUSTOM event to the run's subscribers;
// it is not kept in the log. A payload that is not JSON is an error and
// sends nothing; the run goes on.
func (c *Context) Emit(name string, payload any) error {
	b, err := domain.EncodeJSON("the payload of event "+name, payload, 0, domain.CodeValidation)
	if err != nil {
		return err
	}
	c.env.emit(c.RunID, EventCustom, "", map[string]any{"name": name, "payload": b})
	return nil
}

// SetState sets key of the run's state to value (nil removes it) and
// tells subscribers with a STATE_DELTA whose payload is an RFC 6902 JSON
// Patch: {"delta": [{"op": "add"|"replace"|"remove", "path": "/key", …}]}.
// State is for watchers (a stage, a progress figure): it is not kept in
// the log. Like any code between primitives, SetState runs again on every
// replay and rebuilds the same state from the replayed results; only a
// change made past the replayed part of the log is emitted, so a
// subscriber sees each change once. A value that is not JSON is an error
// and changes nothing; the run goes on.
func (c *Context) SetState(key string, value any) error {
	if key == "" {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "SetState: the key must not be empty"}
	}
	op := map[string]any{"path": "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)}
	old, had := c.state[key]
	if value == nil {
		if !had {
			return nil
		}
		delete(c.state, key)
		op["op"] = "remove"
	} else {
		b, err := domain.EncodeJSON("state "+key, value, 0, domain.CodeValidation)
		if err != nil {
			return err
		}
		if had && string(old) == string(b) {
			return nil
		}
		if c.state == nil {
			c.state = map[string]json.RawMessage{}
		}
		c.state[key] = b
		op["op"], op["value"] = "add", b
		if had {
			op["op"] = "replace"
		}
	}
	if c.pos >= len(c.hist.order) {
		c.env.emit(c.RunID, EventStateDelta, "", map[string]any{"delta": []any{op}})
	}
	return nil
}

// State is a copy of the run's state as SetState has built it so far in
// this invocation.
func (c *Context) State() map[string]json.RawMessage {
	return maps.Clone(c.state)
}

// Now is the time, recorded on first reach: a replay gets the same value.
func (c *Context) Now(opts ...Option) (time.Time, error) {
	ms, err := recall(c, primNow, EventNowRecorded, opts, "__now", func() int64 { return c.env.now().UnixMilli() })
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms).UTC(), nil
}

// UUID is a random UUID, recorded on first reach.
func (c *Context) UUID(opts ...Option) (string, error) {
	return recall(c, primUUID, EventUUIDRecorded, opts, "__uuid", uuid.NewString)
}

// recall returns the value the log recorded for a Now or UUID, or, on
// first reach, records fresh() under event type typ and returns it.
func recall[T any](c *Context, kind primitive, typ string, opts []Option, positional string, fresh func() T) (T, error) {
	var v T
	id, r, err := c.reach(kind, optionsOf(opts).id, positional)
	if err != nil {
		return v, err
	}
	if r != nil && r.done != nil {
		var rec recorded
		if err := errors.Join(json.Unmarshal(r.done.Payload, &rec), json.Unmarshal(rec.Value, &v)); err != nil {
			return v, c.halt(fmt.Errorf("decode %s: %w", r.call, err))
		}
		return v, nil
	}
	v = fresh()
	c.record(typ, id, recorded{StepID: id, Value: domain.MustJSON(v)})
	return v, nil
}

// Step runs fn once per run under a durable id and returns its result,
// typed. The result is recorded before Step returns; on replay the recorded
// result (or error, as a *StepError) comes back and fn is not called.
func Step[T any](c *Context, id string, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	if err := domain.ValidateName("step id", id); err != nil {
		return zero, c.halt(err)
	}
	id, r, err := c.reach(primStep, id, "")
	if err != nil {
		return zero, err
	}
	if r != nil && r.done != nil {
		return replayed[T](c, r)
	}
	c.env.emit(c.RunID, EventStepStarted, id, map[string]any{"stepId": id})
	out, ferr := protect(c, fn)
	if ferr != nil && c.Err() != nil {
		// Cut short by a timeout or shutdown, fn did not fail: nothing is
		// recorded, and the invocation runs again.
		return zero, c.halt(c.Err())
	}
	if ferr != nil {
		se := &StepError{StepID: id, Code: domain.CodeStepFailed, Message: ferr.Error()}
		if typed, ok := errors.AsType[*StepError](ferr); ok {
			se.Code, se.Message = typed.Code, typed.Message
		}
		c.record(EventStepFailed, id, stepFailed{StepID: id, Error: se})
	} else {
		// Appended outside the kernel's commit, the result gets the
		// commit's check here, so that both databases keep it alike.
		b, err := domain.EncodeJSON("its result", out, 0, domain.CodeValidation)
		if err != nil {
			return zero, c.halt(fmt.Errorf("step %s: %w", id, err))
		}
		c.record(EventStepFinished, id, stepFinished{StepID: id, Result: b})
	}
	if err := c.flush(); err != nil {
		return zero, err
	}
	// The caller sees what a replay will: the outcome decoded from the log.
	return replayed[T](c, c.hist.byID[id])
}

func replayed[T any](c *Context, r *record) (T, error) {
	var zero T
	if r.done.Type == EventStepFailed {
		var f stepFailed
		if err := json.Unmarshal(r.done.Payload, &f); err != nil || f.Error == nil {
			return zero, c.halt(fmt.Errorf("decode %s: %v", r.call, err))
		}
		return zero, f.Error
	}
	var f stepFinished
	var v T
	if err := json.Unmarshal(r.done.Payload, &f); err != nil {
		return zero, c.halt(fmt.Errorf("decode %s: %w", r.call, err))
	}
	if err := json.Unmarshal(f.Result, &v); err != nil {
		return zero, c.halt(fmt.Errorf("decode the result of %s: %w", r.call, err))
	}
	return v, nil
}

// protect runs fn, turning a panic into an error.
func protect[T any](ctx context.Context, fn func(ctx context.Context) (T, error)) (out T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return fn(ctx)
}

// Sleep pauses the run for d, durably: the wake time is recorded when the
// sleep is first reached.
func (c *Context) Sleep(d time.Duration, opts ...Option) error {
	return c.SleepUntil(c.env.now().Add(d), opts...)
}

// SleepUntil pauses the run until t (a wait on the __timer signal).
func (c *Context) SleepUntil(t time.Time, opts ...Option) error {
	o := optionsOf(opts)
	o.deadline = t
	_, err := c.wait(domain.KindDelay, TimerSignal, o, "__timer")
	return err
}

// WaitForEvent pauses the run until the signal name is delivered, and
// returns its payload, typed. With Timeout or Deadline, ErrTimeout comes
// back if the deadline passes first. A signal delivered before the wait
// is reached was kept for it.
func WaitForEvent[T any](c *Context, name string, opts ...Option) (T, error) {
	var zero T
	if err := domain.ValidateName("signal name", name); err != nil {
		return zero, c.halt(err)
	}
	if strings.HasPrefix(name, reserved) {
		return zero, c.halt(&StepError{Code: domain.CodeValidation, Message: fmt.Sprintf("signal name %q: names starting with %q are replay's own", name, reserved)})
	}
	o := optionsOf(opts)
	if o.timeout > 0 {
		o.deadline = c.env.now().Add(o.timeout)
	}
	payload, err := c.wait(domain.KindSignal, name, o, "__wait-"+name)
	if err != nil {
		return zero, err
	}
	var v T
	if len(payload) > 0 {
		if err := domain.DecodeJSON(payload, &v); err != nil {
			return zero, &StepError{Code: "invalid_signal_payload", Message: fmt.Sprintf("signal %s: %v", name, err)}
		}
	}
	return v, nil
}

// wait resolves a signal wait from the log or a kept delivery, or pauses.
func (c *Context) wait(kind domain.SuspensionKind, name string, o options, positional string) (json.RawMessage, error) {
	id, r, err := c.reach(primSignal, o.id, positional)
	if err != nil {
		return nil, err
	}
	if r != nil && r.done != nil {
		var s signalResolved
		if err := json.Unmarshal(r.done.Payload, &s); err != nil {
			return nil, c.halt(fmt.Errorf("decode %s: %w", r.call, err))
		}
		if s.TimedOut {
			return nil, ErrTimeout
		}
		return s.Payload, nil
	}
	p := &pause{StepID: id, Kind: kind, Name: name, presentation: o.presentation}
	if r != nil && r.awaited != nil {
		var a signalAwaited
		if err := json.Unmarshal(r.awaited.Payload, &a); err != nil {
			return nil, c.halt(fmt.Errorf("decode %s: %w", r.call, err))
		}
		p.Deadline = a.Deadline // first reached earlier: its deadline stands
	} else {
		if !o.deadline.IsZero() {
			d := o.deadline.UTC()
			p.Deadline = &d
		}
		c.record(EventSignalAwaited, id, signalAwaited{StepID: id, Name: name, Deadline: p.Deadline})
	}
	return nil, c.suspend(p)
}

// ApproveOptions describe an approval request. Title, Fields and
// ReasonLabel are how people see it (see domain.Presentation).
type ApproveOptions struct {
	ID          string         `json:"id,omitempty"`
	Title       string         `json:"title"`
	Fields      []domain.Field `json:"fields,omitempty"`
	ReasonLabel string         `json:"reasonLabel,omitempty"`
	Description string         `json:"description,omitempty"`
	// Approvers (emails) and Role (reviewer or admin) name who may
	// decide; admins always may. With neither, any reviewer or admin
	// decides. One approver alone is also the request's assignee, so it
	// shows as theirs in the inbox.
	Approvers []string    `json:"approvers,omitempty"`
	Role      domain.Role `json:"role,omitempty"`
	// Schema is a JSON Schema the decision must satisfy: it is
	// {"approved": bool, "comment": string}, so a schema can require a
	// comment, or one on rejection only.
	Schema json.RawMessage `json:"schema,omitempty"`
	// ApprovalPolicy says how the decision is taken: a quorum, the
	// rejections that reject, separation of duties, a comment required
	// to reject.
	domain.ApprovalPolicy
}

// Decision is an approval's outcome.
type Decision struct {
	Approved bool   `json:"approved"`
	Feedback string `json:"feedback,omitempty"`
	By       string `json:"by,omitempty"`
	// Votes are every vote cast on the approval, the deciding one last.
	Votes []domain.Vote `json:"votes,omitempty"`
}

// Approve pauses the run until a person approves or rejects, and returns
// their decision.
func (c *Context) Approve(opts ApproveOptions) (Decision, error) {
	id, r, err := c.reach(primApproval, opts.ID, "__approval")
	if err != nil {
		return Decision{}, err
	}
	if r != nil && r.done != nil {
		var a approvalResolved
		if err := json.Unmarshal(r.done.Payload, &a); err != nil {
			return Decision{}, c.halt(fmt.Errorf("decode %s: %w", r.call, err))
		}
		var d domain.ApprovalData
		_ = json.Unmarshal(a.Data, &d) // logs written before votes hold none
		return Decision{Approved: a.Approved, Feedback: a.Feedback, By: a.By, Votes: d.Votes}, nil
	}
	if _, err := domain.CheckApprovers(opts.Role, opts.Approvers); err != nil {
		return Decision{}, c.halt(&StepError{Code: domain.CodeValidation, Message: fmt.Sprintf("Approve(%q): %v", id, err)})
	}
	if r == nil || r.awaited == nil {
		c.record(EventApprovalRequested, id, approvalRequested{StepID: id, ApprovalID: id, Title: opts.Title, Description: opts.Description})
	}
	opts.ID = id
	return Decision{}, c.suspend(&pause{StepID: id, Kind: domain.KindApproval, Approval: &opts})
}
