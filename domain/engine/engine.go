// Package engine is Tollgate's runtime: the loop that claims jobs, runs
// steps, fires timers and resumes runs, and the operations that start,
// resume, decide and cancel runs. It knows the database only through
// domain.Store, and time only through domain.Clock.
package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
)

// Opts configures an Engine. Zero values take the defaults noted.
type Opts struct {
	// Workers bounds concurrent step executions in this process (8).
	Workers int
	// Lease is how long a claimed job belongs to this process before another
	// may take it over (30s). Long steps renew it while they run.
	Lease time.Duration
	// PollInterval is the fallback wake-up when no notification arrives (1s).
	PollInterval time.Duration
	// StepTimeout bounds one attempt of a step without its own timeout (5m).
	StepTimeout time.Duration
	// ShutdownGrace is how long in-flight steps may finish after the engine
	// is asked to stop; then they are cancelled and their jobs released (10s).
	ShutdownGrace time.Duration
	// CheckpointLimit bounds encoded checkpoints (256 KiB).
	CheckpointLimit int
	// CommitRetries is how many more times than its retry policy allows a
	// step is run when its outcome cannot be committed, before its run
	// fails with code commit_failed (10). Each failed commit puts the job
	// back for twice as long as the last one, from PollInterval up to a
	// minute.
	CommitRetries int
	// WorkerID names this process in job claims (hostname-pid).
	WorkerID string
	// BatchLimit bounds how many transitions commit in one transaction
	// (64); 1 commits each alone.
	BatchLimit int
	// CommitLanes is how many batches commit at once (1). A database that
	// runs transactions in parallel gains from more.
	CommitLanes int
	// ValidateResumeData checks resume data against a suspension's JSON
	// Schema; nil accepts anything.
	ValidateResumeData func(schema, data json.RawMessage) error
	// ValidateInput checks a run input against its workflow's InputSchema;
	// nil accepts anything.
	ValidateInput func(schema, data json.RawMessage) error
	// OnCommit is called after every committed step outcome.
	OnCommit func(runID string, res domain.CommitResult)
	// Trace, when set, starts a span (tracing) around each job's step and
	// each transition's commit; end is called with its outcome. Nil traces
	// nothing.
	Trace func(ctx context.Context, name string, attrs map[string]string) (context.Context, func(error))
	Clock domain.Clock
	Log   *slog.Logger
}

func (o *Opts) defaults() {
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 5 * time.Minute
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 10 * time.Second
	}
	if o.CommitRetries <= 0 {
		o.CommitRetries = 10
	}
	if o.CheckpointLimit <= 0 {
		o.CheckpointLimit = domain.DefaultCheckpointLimit
	}
	if o.BatchLimit <= 0 {
		o.BatchLimit = 64
	}
	if o.WorkerID == "" {
		host, _ := os.Hostname()
		o.WorkerID = host + "-" + strconv.Itoa(os.Getpid())
	}
	if o.Clock == nil {
		o.Clock = domain.SystemClock{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Engine executes workflows from a Registry against a Store.
type Engine struct {
	store   domain.Store
	reg     *domain.Registry
	o       Opts
	log     *slog.Logger
	freed   chan struct{}
	slots   chan struct{} // one per step executing
	commits *committer
	Metrics *Metrics
	// committing counts transitions queued for or in a commit.
	committing atomic.Int64
	// held counts the jobs this engine runs or commits: claimed or
	// handed to it and not yet done. Claims keep it within maxHeld, so
	// that claims run ahead of commits by two batches a lane at most, and
	// a herd's jobs stay in the queue, for any process to take, rather
	// than pile up in this one's memory.
	held    atomic.Int64
	maxHeld int64
	// ask is how many jobs the next claim may ask for (see firstClaim);
	// only Run's loop claims.
	ask int

	mu   sync.Mutex
	pool *pool // while Run runs
	// ready are jobs this engine's own commits handed to it, claimed for
	// it, waiting for a slot: a slot that frees runs the oldest of them
	// before any claim. promised counts handoffs asked of commits still
	// in flight. Together they stay within the engine's slots, so a
	// handed job waits for at most one step's worth of turns.
	ready    []readyJob
	promised int
	// releasing counts the handed jobs being given back to the queue,
	// which Run waits for before it returns: nothing of the engine's
	// writes or logs after that.
	releasing sync.WaitGroup
}

// readyJob is a job handed to this engine, how many handoffs in a row led
// to it (see chainLimit), and until when its claim is this engine's.
type readyJob struct {
	job   domain.Job
	chain int
	lease time.Time
}

// pool is what a running engine executes jobs with.
type pool struct {
	steps, engine context.Context // a step's context, and Run's own
	wg            sync.WaitGroup
}

// New returns an engine; call Run to start processing jobs.
func New(store domain.Store, reg *domain.Registry, o Opts) *Engine {
	o.defaults()
	return &Engine{store: store, reg: reg, o: o, log: o.Log, freed: make(chan struct{}, 1), slots: make(chan struct{}, o.Workers),
		commits: newCommitter(store, o.BatchLimit, o.CommitLanes), Metrics: NewMetrics(),
		maxHeld: int64(o.Workers + 2*o.BatchLimit*max(o.CommitLanes, 1))}
}

// Workers says how many worker slots are taken (a step executing) and how
// many there are.
func (e *Engine) Workers() (busy, capacity int) { return len(e.slots), cap(e.slots) }

// Registry returns the workflows this engine runs.
func (e *Engine) Registry() *domain.Registry { return e.reg }

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// Start begins a run of the latest version of workflowID in the system's
// name (a webhook trigger, a seed, an example), which any workflow allows.
// With an idempotency key the system already used for that workflow it
// returns the existing run and created=false.
func (e *Engine) Start(ctx context.Context, workflowID string, input json.RawMessage, idempotencyKey string) (domain.Run, bool, error) {
	return e.StartAs(ctx, domain.Starter{}, workflowID, input, idempotencyKey)
}

// StartAs begins a run of the latest version of workflowID that by starts;
// the zero Starter is the system. A person must be one the workflow lets
// start it (Workflow.MayStart), else the error is ErrStartForbidden and
// nothing is created. An idempotency key belongs to its starter: with one
// that by already used for that workflow it returns the existing run and
// created=false, and the same key from someone else starts another run.
func (e *Engine) StartAs(ctx context.Context, by domain.Starter, workflowID string, input json.RawMessage, idempotencyKey string) (domain.Run, bool, error) {
	return e.startRun(ctx, by, workflowID, input, idempotencyKey, "")
}

// Rerun starts a new run of the latest version of run's workflow, as
// StartAs does, with input (the run's own when nil); its RUN_CREATED
// names the run it runs again. The run itself is left as it is.
func (e *Engine) Rerun(ctx context.Context, by domain.Starter, run domain.Run, input json.RawMessage, idempotencyKey string) (domain.Run, bool, error) {
	if input == nil {
		input = run.Input
	}
	return e.startRun(ctx, by, run.WorkflowID, input, idempotencyKey, run.ID)
}

func (e *Engine) startRun(ctx context.Context, by domain.Starter, workflowID string, input json.RawMessage, idempotencyKey, rerunOf string) (domain.Run, bool, error) {
	nr, err := e.newRun(ctx, by, workflowID, input, idempotencyKey, rerunOf)
	if err != nil {
		return domain.Run{}, false, err
	}
	nr.Handoff = e.handoff()
	a := e.apply(ctx, domain.Transition{Start: &nr})
	e.dispatch(nr.Handoff, a.Err)
	return a.Run, a.Created, a.Err
}

// NewRun checks a start of workflowID as StartAs does (who may start it,
// its input against the workflow's schema, the idempotency key) and
// returns the run it would create, for a caller that writes the run
// itself, inside a transaction of its own.
func (e *Engine) NewRun(ctx context.Context, by domain.Starter, workflowID string, input json.RawMessage, idempotencyKey string) (domain.NewRun, error) {
	return e.newRun(ctx, by, workflowID, input, idempotencyKey, "")
}

func (e *Engine) newRun(ctx context.Context, by domain.Starter, workflowID string, input json.RawMessage, idempotencyKey, rerunOf string) (domain.NewRun, error) {
	wf, err := e.reg.Find(ctx, workflowID, "")
	if err != nil {
		return domain.NewRun{}, fmt.Errorf("start run: workflow %q: %w", workflowID, err)
	}
	if !by.System() && !wf.MayStart(by.Role) {
		return domain.NewRun{}, fmt.Errorf("start run of %s as %s: %w", workflowID, by.Role, domain.ErrStartForbidden)
	}
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	// Checked here, not left to the database: PostgreSQL refuses some JSON
	// that SQLite stores, and a run must start (or not) the same on both.
	if err := domain.CheckJSON(input); err != nil {
		return domain.NewRun{}, fmt.Errorf("start run of %s: input: %w", workflowID, err)
	}
	if len(wf.InputSchema) > 0 && e.o.ValidateInput != nil {
		if err := e.o.ValidateInput(wf.InputSchema, input); err != nil {
			return domain.NewRun{}, fmt.Errorf("start run of %s: input: %w", workflowID, err)
		}
	}
	if len(idempotencyKey) > 255 {
		return domain.NewRun{}, &domain.ValidationError{Code: domain.CodeValidation, Message: "Idempotency-Key is longer than 255 characters"}
	}
	return domain.NewRun{
		ID: newID(), WorkflowID: wf.ID, WorkflowVersion: wf.Version, Input: input,
		IdempotencyKey: idempotencyKey, StartedBy: by, FirstStep: wf.FirstStep(), Now: e.o.Clock.Now(),
		RerunOf: rerunOf,
	}, nil
}

// Resume supplies resume data to a pending suspension (by ID, or by run and
// step key before the pause has committed). Data that breaks the
// suspension's schema is a *domain.ValidationError and changes nothing.
func (e *Engine) Resume(ctx context.Context, req domain.ResumeRequest) (domain.Suspension, error) {
	req.Now = e.o.Clock.Now()
	if len(req.Data) == 0 {
		req.Data = json.RawMessage("null")
	}
	if err := domain.CheckJSON(req.Data); err != nil {
		return domain.Suspension{}, fmt.Errorf("resume: data: %w", err)
	}
	uploaded, err := e.uploadedDocuments(ctx, req)
	if err != nil {
		return domain.Suspension{}, err
	}
	req.Check = func(s domain.Suspension) error {
		if err := e.checkResume(s, req); err != nil {
			return err
		}
		return domain.CheckNamedDocuments(req.Data, uploaded)
	}
	req.Handoff = e.handoff()
	a := e.apply(ctx, domain.Transition{Resume: &req})
	e.dispatch(req.Handoff, a.Err)
	return a.Suspension, a.Err
}

// uploadedDocuments answers, for each id the resume data names, whether
// it is a document uploaded to the suspension being resumed: completed
// before, or staged and completed by this very resume. A resume by step
// key has no suspension to upload to yet, so it may name none: it is
// refused here, as the check inside the store's transaction does not run
// for a resume kept before its pause. A completed document stays so; only
// the store's transaction decides whether the resume wins.
func (e *Engine) uploadedDocuments(ctx context.Context, req domain.ResumeRequest) (func(string) bool, error) {
	ids, named := domain.NamedDocuments(req.Data)
	if !named {
		return nil, nil
	}
	known := map[string]bool{}
	for _, id := range req.Documents {
		known[id] = true
	}
	if req.SuspensionID == "" {
		if err := domain.CheckNamedDocuments(req.Data, func(string) bool { return false }); err != nil {
			return nil, fmt.Errorf("resume %s step %s: %w", req.RunID, req.StepKey, err)
		}
		return nil, nil
	}
	done, err := e.store.UploadedDocuments(ctx, req.SuspensionID, ids)
	if err != nil {
		return nil, fmt.Errorf("resume suspension %s: %w", req.SuspensionID, err)
	}
	for _, id := range done {
		known[id] = true
	}
	return func(id string) bool { return known[id] }, nil
}

// checkResume vets a resume of the pending suspension s: the person acting
// must be one it lets act, a review takes a decision, anything else data,
// and the data (a decision's too) must match the suspension's schema.
func (e *Engine) checkResume(s domain.Suspension, req domain.ResumeRequest) error {
	if req.Actor != nil {
		check := s.CheckActor
		if req.LinkID != "" {
			creator := domain.User{}
			if req.LinkCreator != nil {
				creator = *req.LinkCreator
			}
			check = func(u domain.User) error { return s.CheckLinkActor(u, creator) }
		}
		if err := check(*req.Actor); err != nil {
			return err
		}
	}
	if s.Kind == domain.KindApproval && req.Decision == "" {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "suspension " + s.ID + " awaits a review: approve or reject it"}
	}
	if req.Decision != "" && s.Kind != domain.KindApproval {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "suspension " + s.ID + " is not a review; resume it with data"}
	}
	if req.Decision != "" && req.SuspensionID == "" && !s.Policy.IsZero() {
		// Kept before its pause committed: a decision taken by votes
		// under a policy is cast on the pending request, by its id.
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "suspension " + s.ID + " is decided by votes under its policy; decide it by its id once it waits"}
	}
	// A decision's data is {"approved", "comment"}: its schema can ask
	// for a comment, or for one only on rejection.
	if len(s.ResumeSchema) > 0 && e.o.ValidateResumeData != nil {
		return e.o.ValidateResumeData(s.ResumeSchema, req.Data)
	}
	return nil
}

// Decide approves or rejects the review suspension req names (by id); req
// says who decides, and may carry an idempotency key and an audit entry.
// The decision is the suspension's resume data:
// {"approved": bool, "comment": string}.
func (e *Engine) Decide(ctx context.Context, req domain.ResumeRequest, approve bool, comment string) (domain.Suspension, error) {
	req.Decision = domain.DecisionRejected
	if approve {
		req.Decision = domain.DecisionApproved
	}
	req.Data = domain.MustJSON(domain.ApprovalData{Approved: approve, Comment: comment})
	return e.Resume(ctx, req)
}

// Cancel ends a run that has not finished. Its reason, optional, is at
// most 500 characters once trimmed, else a *domain.ValidationError.
func (e *Engine) Cancel(ctx context.Context, req domain.CancelRequest) (domain.Run, error) {
	req.Reason = strings.TrimSpace(req.Reason)
	if err := checkReason("cancelling", req.Reason, false); err != nil {
		return domain.Run{}, err
	}
	req.Now = e.o.Clock.Now()
	a := e.apply(ctx, domain.Transition{Cancel: &req})
	return a.Run, a.Err
}

// Retry takes a failed run up again from the step that failed it, with
// that step's input and the run's state as they were (domain.RetryRequest).
// A run that did not fail refuses with CodeRunNotFailed: two retries of
// one failure make one attempt.
func (e *Engine) Retry(ctx context.Context, req domain.RetryRequest) (domain.Run, error) {
	req.Reason = strings.TrimSpace(req.Reason)
	if err := checkReason("retrying", req.Reason, false); err != nil {
		return domain.Run{}, err
	}
	req.Now = e.o.Clock.Now()
	a := e.apply(ctx, domain.Transition{Retry: &req})
	return a.Run, a.Err
}

// ReportWork takes an async step's report on its work item: the item ends
// as the report says and the pause waiting for it resumes, in one commit
// with whatever else is committing, as the item's DecideReport decides. A
// refused report fails with its *WorkStateError, after the change
// DecideReport asks for (if any) has committed. As for a resume, the step
// the report resumes runs in this engine, without a claim, when it has a
// free slot.
func (e *Engine) ReportWork(ctx context.Context, r domain.WorkReport) (domain.WorkItem, error) {
	r.Now = e.o.Clock.Now()
	r.Handoff = e.handoff()
	a := e.apply(ctx, domain.Transition{Report: &r})
	e.dispatch(r.Handoff, a.Err)
	return a.WorkItem, a.Err
}

// Run claims and executes jobs until ctx is cancelled. Then it stops
// claiming, lets in-flight steps finish for ShutdownGrace, cancels the rest
// and gives their jobs back to the queue.
func (e *Engine) Run(ctx context.Context) error {
	stepCtx, cancelSteps := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSteps()
	p := &pool{steps: stepCtx, engine: ctx}
	e.mu.Lock()
	e.pool = p
	e.mu.Unlock()
	rescue := time.NewTicker(max(e.o.Lease/2, 10*time.Millisecond))
	defer rescue.Stop()
	// due says that jobs may be due that no claim has seen: at start, after
	// a wake-up or a timer, and after a claim that took all it asked for.
	// A slot that frees claims only then, so a process whose queue is empty
	// does not ask the database again each time a step ends. next is the
	// earliest run-at the queue held when a claim emptied it of due jobs.
	due, next := true, time.Time{}
	// poll is when the loop asks the database again without being told
	// to: PollInterval after its last claim, however often slots free
	// meanwhile.
	poll := e.o.Clock.Now().Add(e.o.PollInterval)
	for ctx.Err() == nil {
		select {
		case <-rescue.C: // also under constant load, when wait is never reached
			e.sweepReady()
			if e.rescue(ctx) {
				due = true
			}
		default:
		}
		if due && len(e.slots) < cap(e.slots) && e.room() > 0 {
			claimed, asked := e.claim(ctx, p)
			poll = e.o.Clock.Now().Add(e.o.PollInterval)
			if claimed == asked {
				// Every slot asked for is filled, and due jobs may be left:
				// claim again at once if more slots are free, else when
				// one frees.
				continue
			}
			due, next = false, e.nextJobAt(ctx)
		}
		wake := poll
		if !next.IsZero() && next.Before(poll) {
			wake = next
		}
		if len(e.slots) == cap(e.slots) || e.room() <= 0 {
			wake = time.Time{} // nothing can be claimed before a slot frees, or a commit ends
		}
		if e.wait(ctx, rescue.C, wake) {
			due = true
		}
	}
	e.stopHandoffs()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(e.o.ShutdownGrace):
		e.log.Warn("Cancelling in-flight steps at shutdown")
		cancelSteps()
		<-done
	}
	e.releasing.Wait()
	return nil
}

// claim takes the free slots first, then claims as many due jobs and
// starts them, and gives back the slots it did not fill. The slots are
// taken before the claim because a handoff may take one at any moment:
// a job claimed with no slot to run in would wait, its lease running out.
func (e *Engine) claim(ctx context.Context, p *pool) (claimed, asked int) {
	limit := min(cap(e.slots), max(e.ask, firstClaim))
	for room := e.room(); asked < limit && int64(asked) < room && e.reserve(); {
		asked++
	}
	if asked == 0 {
		return 0, 0
	}
	jobs, err := e.store.ClaimJobs(ctx, e.o.WorkerID, e.o.Clock.Now(), e.o.Lease, asked)
	if err != nil && ctx.Err() == nil {
		e.log.ErrorContext(ctx, "Claiming jobs failed", "error", err)
	}
	if len(jobs) > asked {
		// A store must not claim more than asked; had it, the jobs
		// beyond the slots taken would run in slots nobody took.
		e.log.Error("A claim took more jobs than it asked for; the rest go back to the queue", "asked", asked, "claimed", len(jobs))
		for _, j := range jobs[asked:] {
			e.release(j, 0, false)
		}
		jobs = jobs[:asked]
	}
	for _, j := range jobs {
		e.start(p, j, 0)
	}
	for range asked - len(jobs) {
		e.free()
	}
	e.ask = firstClaim
	if len(jobs) == asked {
		e.ask = 2 * asked
	}
	return len(jobs), asked
}

// firstClaim bounds the first claim after one that found the queue short
// of due jobs; each claim that takes all it asked for doubles the next,
// up to the free slots. The first job of a herd then starts after a claim
// (and a wake of its timers) of 16 jobs, not of every slot's, and the
// rest follow in claims as large as the slots allow.
const firstClaim = 16

// room is how many more jobs a claim may take on top of those held: the
// steps that run and the commits that wait for their batch.
func (e *Engine) room() int64 { return e.maxHeld - e.held.Load() }

// reserve takes a free slot, if there is one.
func (e *Engine) reserve() bool {
	select {
	case e.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// start executes j in a slot already taken. The slot is freed as soon as
// the step's code has run (see runJob), or when the job ends otherwise:
// a slot bounds running step code, not commits in flight, so the steps
// of a herd commit in batches as large as the committer makes them.
func (e *Engine) start(p *pool, j domain.Job, chain int) {
	p.wg.Add(1)
	e.held.Add(1)
	go func() {
		defer p.wg.Done()
		defer e.done()
		var once sync.Once
		slot := func() { once.Do(e.free) }
		defer slot()
		e.execute(p.steps, p.engine, j, chain, slot, false)
	}()
}

// done counts a held job's end, and tells the claim loop when that makes
// room for a claim it held back.
func (e *Engine) done() {
	if e.held.Add(-1) == e.maxHeld-1 {
		select {
		case e.freed <- struct{}{}:
		default:
		}
	}
}

// chainLimit bounds how many jobs run one after another through handoffs
// before the next goes through the queue, where every run gets its turn.
const chainLimit = 64

// free gives a slot back: to the oldest job handed to this engine and
// waiting for one, or to the claim loop, which it tells.
func (e *Engine) free() {
	e.mu.Lock()
	e.dropStaleReady()
	if len(e.ready) > 0 && e.pool != nil {
		r := e.ready[0]
		e.ready = e.ready[1:]
		e.start(e.pool, r.job, r.chain) // the slot passes to it
		e.mu.Unlock()
		return
	}
	select {
	case <-e.slots:
	default:
		// Each slot is given back once by whoever took it. One given back
		// twice would wait here for a slot taken by somebody else, and at
		// shutdown, with none taken any more, for ever.
		e.log.Error("A worker slot was given back that was not taken")
	}
	e.mu.Unlock()
	select {
	case e.freed <- struct{}{}:
	default:
	}
}

// dropStaleReady gives back to the queue the jobs waiting for a slot whose
// claim has less than half a lease left: every slot held by a step longer
// than that, a job that started now might outlive its claim, be rescued
// and run twice. e.mu is held.
func (e *Engine) dropStaleReady() {
	soon := e.o.Clock.Now().Add(e.o.Lease / 2)
	keep := e.ready[:0]
	for _, r := range e.ready {
		if r.lease.Before(soon) {
			e.releasing.Go(func() { e.release(r.job, 0, false) })
			continue
		}
		keep = append(keep, r)
	}
	clear(e.ready[len(keep):])
	e.ready = keep
}

// sweepReady drops the stale jobs waiting for a slot (see dropStaleReady)
// when no slot frees for a while.
func (e *Engine) sweepReady() {
	e.mu.Lock()
	e.dropStaleReady()
	e.mu.Unlock()
}

// handoff asks that the job a start, resume or commit is about to enqueue
// be handed over claimed to this engine (see domain.Handoff), so that it
// starts without a claim or a wake-up. It is nil when this engine is not
// running, or when as many jobs as it has slots are already handed to it
// or promised; the job then goes through the queue. A handoff asked for
// is settled by handed, whatever the commit did.
func (e *Engine) handoff() *domain.Handoff {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pool == nil || e.promised+len(e.ready) >= cap(e.slots) {
		return nil
	}
	e.promised++
	return &domain.Handoff{Worker: e.o.WorkerID, LeaseUntil: e.o.Clock.Now().Add(e.o.Lease)}
}

// handed settles handoff h: the job its commit handed over (none when
// the commit failed or enqueued nothing) runs in a free slot at once, or
// waits for the next slot to free. A job handed over as the engine stops
// goes back to the queue.
func (e *Engine) handed(h *domain.Handoff, err error, chain int) {
	if h == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.promised--
	if err != nil || h.Job == nil {
		return
	}
	switch {
	case e.pool == nil:
		job := *h.Job
		e.releasing.Go(func() { e.release(job, 0, false) })
	case e.reserve():
		e.start(e.pool, *h.Job, chain)
	default:
		e.ready = append(e.ready, readyJob{job: *h.Job, chain: chain, lease: h.LeaseUntil})
	}
}

// dispatch settles the handoff of a start, resume, signal or report.
func (e *Engine) dispatch(h *domain.Handoff, err error) { e.handed(h, err, 0) }

// stopHandoffs ends handoffs as the engine stops: none is asked for from
// here on, and the jobs waiting for a slot go back to the queue.
func (e *Engine) stopHandoffs() {
	e.mu.Lock()
	e.pool = nil
	waiting := e.ready
	e.ready = nil
	e.mu.Unlock()
	for _, r := range waiting {
		e.release(r.job, 0, false)
	}
}

// nextJobAt is when the earliest queued job is due, or the zero time when
// the queue is empty or cannot be read (the poll interval then bounds the
// sleep).
func (e *Engine) nextJobAt(ctx context.Context) time.Time {
	at, ok, err := e.store.NextJobAt(ctx)
	if err != nil || !ok {
		return time.Time{}
	}
	return at
}

// wait blocks until the loop should claim again, and reports whether it
// should: at (a job comes due, or the poll; zero: only when told), a
// wake-up, a rescue that returned jobs, or the end of ctx. A slot that
// frees returns false: the loop claims then only if jobs are due anyway.
// No sleep is longer than the poll interval, so a wall clock that jumps
// forward makes a timer fire early rather than late, and one that jumps
// back only delays it.
func (e *Engine) wait(ctx context.Context, rescue <-chan time.Time, at time.Time) bool {
	var timer <-chan time.Time
	if !at.IsZero() {
		d := min(at.Sub(e.o.Clock.Now()), e.o.PollInterval)
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
	case <-e.store.Wakeups():
	case <-e.freed:
		return false
	case <-timer:
	case <-rescue:
		return e.rescue(ctx)
	}
	return true
}

// rescue returns jobs whose lease expired (their worker died) to the queue,
// and reports whether it did.
func (e *Engine) rescue(ctx context.Context) bool {
	n, err := e.store.RescueJobs(ctx, e.o.Clock.Now())
	if err != nil {
		e.log.ErrorContext(ctx, "Rescuing jobs failed", "error", err)
	} else if n > 0 {
		e.log.WarnContext(ctx, "Rescued jobs whose lease expired", "jobs", n)
	}
	return n > 0
}

// execute runs one claimed job to its commit, in the slot that slot
// frees, and returns the job the commit handed back when own asks for it
// (see runJob). shutdown is the engine's
// context: once it is done, a step that fails because it was cancelled
// gives its job back instead of using up an attempt.
func (e *Engine) execute(ctx, shutdown context.Context, job domain.Job, chain int, slot func(), own bool) *domain.Job {
	ctx, stopHeartbeat := e.heartbeat(ctx, job)
	defer stopHeartbeat()
	next, err := e.runJob(ctx, job, chain, slot, own)
	if err == nil {
		return next
	}
	if errors.Is(err, domain.ErrStale) {
		e.log.WarnContext(ctx, "Dropped the outcome of a job whose lease was lost or whose run was deleted", "job_id", job.ID, "run_id", job.RunID)
		return nil
	}
	if errors.Is(err, domain.ErrNotFound) {
		// The run, or the suspension the job resumes, was deleted after the
		// claim; the job went with them, so there is nothing to give back.
		e.log.WarnContext(ctx, "Dropped a job whose run was deleted", "job_id", job.ID, "run_id", job.RunID)
		return nil
	}
	if shutdown.Err() != nil || ctx.Err() != nil {
		e.release(job, 0, false)
		return nil
	}
	if errors.Is(err, domain.ErrLogConflict) {
		// Another invocation wrote to the run's log first: run again at
		// once from the longer log. The attempt counts, so two drivers
		// that keep colliding end the run rather than loop.
		e.log.InfoContext(ctx, "The run's log changed under the step; it runs again", "job_id", job.ID, "run_id", job.RunID)
		e.release(job, 0, true)
		return nil
	}
	// Not due at once: a database that keeps refusing this commit would
	// otherwise have the job claimed, run and refused again in a hot loop.
	// The attempt counts, so a commit that never succeeds ends its run
	// (see prepare) instead of running the step forever.
	e.log.ErrorContext(ctx, "Job failed before commit; it will run again", "job_id", job.ID, "run_id", job.RunID, "attempt", job.Attempt, "error", err)
	e.release(job, commitBackoff(e.o.PollInterval, job.Attempt), true)
	return nil
}

// runJob runs job to its commit: a step's or resume's, or a ladder's
// rung. The slot is freed once the step's code has run, before the commit
// waits for its batch. The job the commit hands back, if any, runs next
// in this engine's pool (see handed), or, with own, is returned to the
// caller, who runs it next.
func (e *Engine) runJob(ctx context.Context, job domain.Job, chain int, slot func(), own bool) (next *domain.Job, err error) {
	if job.Kind == domain.JobEscalate {
		slot()
		return nil, e.escalate(ctx, job)
	}
	start := time.Now()
	if job.Run == nil { // read once here, for the step's metrics and for prepare
		run, err := e.jobRun(ctx, job)
		if err != nil {
			return nil, err
		}
		job.Run = &run
	}
	if e.o.Trace != nil {
		var end func(error)
		ctx, end = e.o.Trace(ctx, "step "+cmp.Or(job.Step, string(job.Kind)), map[string]string{"run_id": job.RunID, "workflow_id": job.Run.WorkflowID,
			"step": job.Step, "job_kind": string(job.Kind), "attempt": strconv.Itoa(job.Attempt)})
		defer func() { end(err) }()
	}
	commit, skip, err := e.prepare(ctx, job)
	slot()
	if err != nil || skip {
		return nil, err
	}
	switch {
	case own:
		commit.Handoff = &domain.Handoff{Worker: e.o.WorkerID, LeaseUntil: e.o.Clock.Now().Add(e.o.Lease)}
	case chain+1 < chainLimit:
		commit.Handoff = e.handoff()
	}
	err = e.commit(ctx, job, commit)
	if !own {
		e.handed(commit.Handoff, err, chain+1)
	}
	if err != nil {
		return nil, err
	}
	e.Metrics.observeStep(job.Run.WorkflowID, commit, time.Since(start))
	if own {
		return commit.Handoff.Job, nil
	}
	return nil, nil
}

// escalate fires the rung of a request's deadline ladder that job is
// for. The store decides, under the run's lock, whether it still fires
// (domain.DecideEscalation) and commits what it does with the job's end.
func (e *Engine) escalate(ctx context.Context, job domain.Job) error {
	var in domain.EscalationInput
	if err := json.Unmarshal(job.Input, &in); err != nil {
		return fmt.Errorf("escalate job %d: its input %s is not a rung: %w", job.ID, job.Input, err)
	}
	a := e.apply(ctx, domain.Transition{Escalate: &domain.EscalateRequest{
		Job: job.Ref(), RunID: job.RunID, SuspensionID: job.SuspensionID, Rung: in.Rung, Now: e.o.Clock.Now()}})
	return a.Err
}

// commitBackoff doubles from poll with each attempt, up to a minute.
func commitBackoff(poll time.Duration, attempt int) time.Duration {
	return domain.RetryPolicy{InitialBackoff: poll, MaxBackoff: time.Minute, Multiplier: 2}.Backoff(attempt, 0)
}

// release gives a claimed job back to the queue, due after the given delay.
func (e *Engine) release(job domain.Job, after time.Duration, keepAttempt bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.store.ReleaseJob(ctx, job.Ref(), e.o.Clock.Now().Add(after), keepAttempt); err != nil && !errors.Is(err, domain.ErrStale) {
		e.log.Error("Releasing job failed; its lease will expire", "job_id", job.ID, "error", err)
	}
}

func (e *Engine) commit(ctx context.Context, job domain.Job, c domain.StepCommit) error {
	c.CheckEarlyResume = e.checkResume
	a := e.apply(ctx, domain.Transition{Step: &c})
	if a.Err != nil {
		return a.Err
	}
	res := a.Commit
	e.Metrics.observeCommit(job, res, c, e.o.Clock.Now())
	if e.o.OnCommit != nil {
		e.o.OnCommit(c.RunID, res)
	}
	return nil
}

// heartbeat renews the job's lease while its step runs, so a slow step is
// not taken over by another worker.
func (e *Engine) heartbeat(ctx context.Context, job domain.Job) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	every := e.o.Lease / 3
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := e.store.ExtendLease(ctx, job.Ref(), e.o.Clock.Now().Add(e.o.Lease)); errors.Is(err, domain.ErrStale) {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, cancel
}
