package domain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// StepFunc is a Go step: it receives its input and returns output, events
// and commands. An error (or a panic) fails the attempt; the step's retry
// policy decides whether it runs again.
type StepFunc func(ctx context.Context, req StepRequest) (StepResult, error)

// StepRequest is what a step execution receives.
type StepRequest struct {
	RunID           string
	WorkflowID      string
	WorkflowVersion string
	Step            string
	// Attempt counts executions of this job, from 1.
	Attempt int
	// Input is the run input (first step), an invoke's input, or — when
	// Resumed — a ResumePayload {checkpoint, resumeData}.
	Input   json.RawMessage
	Resumed bool
	// Start is true for the run's first step execution, whose Input is the
	// run input.
	Start bool
	// RunInput is the run's input, whichever step runs.
	RunInput json.RawMessage
	// IdempotencyKey is stable across retries of this step execution; pass
	// it to external systems so a repeated attempt has no second effect.
	IdempotencyKey string
}

// Bind decodes the step's input into v, matching names exactly (see
// DecodeJSON).
func (r StepRequest) Bind(v any) error {
	if len(r.Input) == 0 {
		return nil
	}
	if err := DecodeJSON(r.Input, v); err != nil {
		return fmt.Errorf("decode input of step %s: %w", r.Step, err)
	}
	return nil
}

// Resume decodes a resumed step's input: the resume payload, with its
// checkpoint decoded into checkpoint. Names match exactly (see DecodeJSON).
func (r StepRequest) Resume(checkpoint any) (ResumePayload, error) {
	var p ResumePayload
	err := DecodeJSON(r.Input, &p)
	if err == nil && len(p.Checkpoint) > 0 {
		err = DecodeJSON(p.Checkpoint, checkpoint)
	}
	if err != nil {
		return p, fmt.Errorf("decode the resume of step %s: %w", r.Step, err)
	}
	return p, nil
}

// StepResult is a step's outcome: output, events, commands. A result without
// commands ends its branch; when no other branch remains, the run succeeds
// with this output.
type StepResult struct {
	Output   any
	Events   []StepEvent
	Commands []Command
	// Completion adds fields to the step's STEP_COMPLETED event, beside
	// its output (a wait step's {"resumedFromWait": true}).
	Completion map[string]any
	// ExpectSeq is the run's next event index this result was computed
	// from (see StepCommit.ExpectSeq); zero for steps that do not read the
	// log.
	ExpectSeq int64
}

// RetryPolicy says how often and how soon a failing step runs again.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt; 1 means no retry.
	MaxAttempts    int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
	// Jitter is the fraction (0–1) of each backoff that is randomised, so
	// that steps failing together do not retry together.
	Jitter float64
}

// DefaultRetry is used for steps registered without a policy.
var DefaultRetry = RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: time.Minute, Multiplier: 2, Jitter: 0.2}

// Backoff returns the wait before attempt+1, given a uniform random number
// r in [0,1). The wait grows exponentially up to MaxBackoff; the jittered
// part is spread evenly below the nominal value, so a backoff never exceeds
// its cap.
func (p RetryPolicy) Backoff(attempt int, r float64) time.Duration {
	mult := p.Multiplier
	if mult < 1 {
		mult = 1
	}
	d := float64(p.InitialBackoff) * math.Pow(mult, float64(max(attempt-1, 0)))
	// Uncapped, the exponential outgrows a Duration after enough attempts,
	// and converting such a float gives garbage (a negative wait on amd64),
	// so it is held to maxBackoff. !(d <= limit) also catches NaN.
	limit := maxBackoff
	if p.MaxBackoff > 0 {
		limit = float64(p.MaxBackoff)
	}
	if !(d <= limit) {
		d = limit
	}
	j := p.Jitter
	if !(j > 0) {
		j = 0
	}
	return time.Duration(d * (1 - min(j, 1)*r))
}

// Jitter is a uniform random number in [0,1): the r of Backoff.
func Jitter() float64 { return rand.Float64() }

// maxBackoff is the longest wait Backoff returns (about 146 years): a
// Duration, with room to spare, as a float64.
const maxBackoff = float64(1 << 62)

// Validate reports the first thing wrong with p: fewer than one attempt, a
// negative backoff or multiplier, or a jitter outside 0–1.
func (p RetryPolicy) Validate() error {
	if p.MaxAttempts < 1 {
		return errors.New("retry policy needs MaxAttempts ≥ 1")
	}
	if p.InitialBackoff < 0 || p.MaxBackoff < 0 || !(p.Jitter >= 0 && p.Jitter <= 1) {
		return errors.New("retry policy has a negative backoff or a jitter outside 0–1")
	}
	if !(p.Multiplier >= 0) {
		return errors.New("retry policy has a multiplier that is negative or not a number")
	}
	return nil
}

// StepDef is a registered step.
type StepDef struct {
	Name  string
	Func  StepFunc
	Retry RetryPolicy
	// Timeout bounds one attempt; zero means the engine's default.
	Timeout time.Duration
}

// StepOption refines a step definition.
type StepOption func(*StepDef)

// WithRetry sets a step's retry policy.
func WithRetry(p RetryPolicy) StepOption { return func(s *StepDef) { s.Retry = p } }

// WithTimeout bounds each attempt of a step.
func WithTimeout(d time.Duration) StepOption { return func(s *StepDef) { s.Timeout = d } }

// Workflow is a named, versioned set of steps. The first step registered is
// where a run starts.
type Workflow struct {
	ID      string
	Version string
	// InputSchema, when set, is a JSON Schema every run input must match.
	InputSchema json.RawMessage
	// WebhookTrigger lets any HTTP call to /v1/webhooks/{id} start a run,
	// with the call as its input.
	WebhookTrigger bool
	// AllowFounders lets founders start runs of the workflow; by default
	// only staff may. A founder's run may ask no one but that founder for
	// anything (see Plan), and the founder may not decide its approvals
	// (see Suspension.CheckActor).
	AllowFounders bool
	// FailEvent, when set, is logged with {runId, code, message} just
	// before RUN_FAILED whenever the kernel fails a run of this workflow
	// itself (see FailEvents): replay workflows close their log with
	// RUN_ERRORED.
	FailEvent string
	// Slack, when set, posts every request of the workflow that waits for
	// a person to Slack, unless its step says otherwise (see WithSlack).
	Slack  string
	steps  []StepDef
	byName map[string]int
	errs   []error
}

// MayStart reports whether a person of role may start runs of w: staff
// always, founders when w allows them.
func (w *Workflow) MayStart(role Role) bool {
	return role.Staff() || (role == RoleFounder && w.AllowFounders)
}

// FailEvents are the events the kernel logs just before RUN_FAILED when it
// fails a run of w itself: after the step's last retry, for a result that
// breaks the command rules, for an outcome that could not be committed, or
// for a version no longer registered. That is FailEvent with {runId, code,
// message}, or nothing when w is nil or names no FailEvent.
func (w *Workflow) FailEvents(runID, step string, re *RunError) []NewEvent {
	if w == nil || w.FailEvent == "" {
		return nil
	}
	return []NewEvent{{Type: w.FailEvent, Step: step, Payload: MustJSON(map[string]any{"runId": runID, "code": re.Code, "message": re.Message})}}
}

// NewWorkflow starts a workflow definition; add steps with Step.
func NewWorkflow(id, version string) *Workflow {
	return &Workflow{ID: id, Version: version, byName: map[string]int{}}
}

// Step adds a step. Errors (a bad or duplicate name) are reported by
// Validate and by Registry.Register.
func (w *Workflow) Step(name string, fn StepFunc, opts ...StepOption) *Workflow {
	if err := ValidateName("step", name); err != nil {
		w.errs = append(w.errs, err)
		return w
	}
	if _, dup := w.byName[name]; dup {
		w.errs = append(w.errs, Invalid("step name %q is used twice in workflow %s", name, w.ID))
		return w
	}
	if fn == nil {
		w.errs = append(w.errs, Invalid("step %q has no function", name))
		return w
	}
	def := StepDef{Name: name, Func: fn, Retry: DefaultRetry}
	for _, o := range opts {
		o(&def)
	}
	if err := def.Retry.Validate(); err != nil {
		w.errs = append(w.errs, Invalid("step %q: %v", name, err))
		return w
	}
	w.byName[name] = len(w.steps)
	w.steps = append(w.steps, def)
	return w
}

// Validate reports every problem of the definition at once.
func (w *Workflow) Validate() error {
	errs := append([]error(nil), w.errs...)
	if err := ValidateName("workflow", w.ID); err != nil {
		errs = append(errs, err)
	}
	if err := ValidateName("version", w.Version); err != nil {
		errs = append(errs, err)
	}
	if len(w.steps) == 0 {
		errs = append(errs, Invalid("workflow %s has no steps", w.ID))
	}
	if w.Slack != "" && !ValidSlackTarget(w.Slack) {
		errs = append(errs, Invalid("workflow %s: slack target %q is not dm, #channel-name or a channel id", w.ID, w.Slack))
	}
	return errors.Join(errs...)
}

// Lookup returns the named step.
func (w *Workflow) Lookup(name string) (StepDef, bool) {
	i, ok := w.byName[name]
	if !ok {
		return StepDef{}, false
	}
	return w.steps[i], true
}

// FirstStep names the step a run starts with.
func (w *Workflow) FirstStep() string { return w.steps[0].Name }

// Steps returns the step names in registration order.
func (w *Workflow) Steps() []string {
	names := make([]string, len(w.steps))
	for i, s := range w.steps {
		names[i] = s.Name
	}
	return names
}

// Registry holds the workflows this process can execute, by id and version.
// It is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	versions map[string]*Workflow // "id@version"
	latest   map[string]*Workflow
	order    []*Workflow
	fallback Resolver
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{versions: map[string]*Workflow{}, latest: map[string]*Workflow{}}
}

// Register adds a workflow version; the last registered version of an id is
// the one new runs start on. A version registers once.
func (r *Registry) Register(w *Workflow) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("register workflow %s@%s: %w", w.ID, w.Version, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := w.ID + "@" + w.Version
	if _, dup := r.versions[key]; dup {
		return fmt.Errorf("register workflow %s: %w", key, &ConflictError{Code: CodeConflict, Message: "version " + w.Version + " of workflow " + w.ID + " is already registered"})
	}
	r.versions[key] = w
	r.latest[w.ID] = w
	r.order = append(r.order, w)
	return nil
}

// Latest returns the version new runs of id start on.
func (r *Registry) Latest(id string) (*Workflow, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	w, ok := r.latest[id]
	return w, ok
}

// Get returns one exact version.
func (r *Registry) Get(id, version string) (*Workflow, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	w, ok := r.versions[id+"@"+version]
	return w, ok
}

// Resolver finds workflows a registry does not hold in code (declarative
// documents kept in the database); an empty version asks for the latest.
// It returns ErrNotFound when there is no such workflow.
type Resolver func(ctx context.Context, id, version string) (*Workflow, error)

// SetFallback makes f the resolver for workflows not registered in code.
func (r *Registry) SetFallback(f Resolver) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fallback = f
}

// Find returns one version of id, or the one new runs start on when
// version is empty: from code, else from the fallback resolver. A
// workflow found nowhere is ErrNotFound; other errors (a database that
// cannot be reached) are returned as they are.
func (r *Registry) Find(ctx context.Context, id, version string) (*Workflow, error) {
	r.mu.RLock()
	w, inCode := r.latest[id]
	if version != "" {
		w = r.versions[id+"@"+version]
	}
	f := r.fallback
	r.mu.RUnlock()
	switch {
	case w != nil:
		return w, nil
	case inCode || f == nil: // an id registered in code is never looked for elsewhere
		return nil, ErrNotFound
	}
	return f(ctx, id, version)
}

// All returns every registered version in registration order.
func (r *Registry) All() []*Workflow {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]*Workflow(nil), r.order...)
}
