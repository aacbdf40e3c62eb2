package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// Scheduler starts runs by the calendar. Schedules are rows: every server
// runs a Scheduler, which claims the schedules due, decides what their
// fires come to (domain.PlanFires) and commits each schedule's runs,
// fire records and next fire as one transition (Transition.Fire) through
// the store's writer, fenced on its claim: a claim's transitions as one
// batch, without waiting for the committer's others, since they are many
// already. A server that dies holding a claim loses
// it when its lease ends, and the fire is decided again by whoever claims
// it next: the run of a fire time is keyed by it, so it starts once.
type Scheduler struct {
	e     *Engine
	store domain.ScheduleStore
	// Batch is how many schedules one claim takes (512); Lease how long
	// a claim lasts (the engine's lease, at most maxScheduleLease).
	Batch int
	Lease time.Duration
	wake  chan struct{}
}

// maxScheduleLease bounds a claim on schedules, well within the default
// catch-up window (a minute): the fires of a server that dies holding
// them are taken over in time to start, not recorded missed.
const maxScheduleLease = 30 * time.Second

// Schedules returns the engine's scheduler over store.
func (e *Engine) Schedules(store domain.ScheduleStore) *Scheduler {
	return &Scheduler{e: e, store: store, Batch: 512, Lease: min(e.o.Lease, maxScheduleLease), wake: make(chan struct{}, 1)}
}

// Store is where the scheduler keeps its schedules.
func (s *Scheduler) Store() domain.ScheduleStore { return s.store }

func (s *Scheduler) now() time.Time { return s.e.o.Clock.Now().UTC() }

// poke wakes Run to look at a schedule changed here.
func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Check validates spec, fills its defaults and checks it against its
// workflow (see checkWorkflow).
func (s *Scheduler) Check(ctx context.Context, spec *domain.ScheduleSpec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	return s.checkWorkflow(ctx, *spec)
}

// checkWorkflow checks that spec's workflow is registered and takes the
// input a fire gives it.
func (s *Scheduler) checkWorkflow(ctx context.Context, spec domain.ScheduleSpec) error {
	if _, err := s.e.reg.Find(ctx, spec.WorkflowID, ""); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return &domain.ValidationError{Code: domain.CodeValidation, Message: "The schedule is not valid",
				Fields: []domain.FieldError{{Field: "/workflowId", Message: "no workflow with this id is registered"}}}
		}
		return err
	}
	if _, err := s.e.newRun(ctx, domain.ScheduleStarter(spec.ID), spec.WorkflowID, domain.ScheduleInput(spec.Input, s.now()), "", ""); err != nil {
		var ve *domain.ValidationError
		if errors.As(err, &ve) {
			return &domain.ValidationError{Code: domain.CodeValidation, Message: "The workflow does not take this schedule's input (with scheduledAt): " + ve.Error(),
				Fields: []domain.FieldError{{Field: "/input", Message: ve.Error()}}}
		}
		return err
	}
	return nil
}

// Create stores a new schedule; its first fire is the rule's first time
// after now.
func (s *Scheduler) Create(ctx context.Context, spec domain.ScheduleSpec, by string, audit *domain.AuditEntry) (domain.Schedule, error) {
	if err := s.Check(ctx, &spec); err != nil {
		return domain.Schedule{}, err
	}
	now := s.now()
	sc := domain.Schedule{ScheduleSpec: spec, Source: domain.ScheduleFromAPI, CreatedBy: by, CreatedAt: now, UpdatedAt: now}
	if err := s.plan(&sc, now); err != nil {
		return domain.Schedule{}, err
	}
	out, err := s.store.CreateSchedule(ctx, sc, audit)
	if err == nil {
		s.poke()
	}
	return out, err
}

// plan sets sc's next fire from now: none while paused.
func (s *Scheduler) plan(sc *domain.Schedule, now time.Time) error {
	sc.NextFireAt, sc.BufferedAt = time.Time{}, time.Time{}
	if sc.Paused {
		return nil
	}
	r, err := sc.Rule()
	if err != nil {
		return err
	}
	sc.NextFireAt = r.Next(now)
	return nil
}

// Update changes the schedule id with change, which edits its spec. A
// changed rule, time zone or a resume fires next at the rule's first time
// after now (a resumed schedule does not replay what it skipped while
// paused); a pause fires nothing and forgets a buffered fire; any other
// change keeps the schedule's timing as its fires leave it. The workflow
// is checked again only when the change names another, gives another
// input or resumes it: a schedule whose workflow is gone can still be
// paused. Changes that meet another's are read and made again.
func (s *Scheduler) Update(ctx context.Context, id string, change func(*domain.ScheduleSpec) error, audit *domain.AuditEntry) (domain.Schedule, error) {
	for attempt := 0; ; attempt++ {
		old, err := s.store.Schedule(ctx, id)
		if err != nil {
			return domain.Schedule{}, err
		}
		sc := old
		if err := change(&sc.ScheduleSpec); err != nil {
			return domain.Schedule{}, err
		}
		sc.ID = old.ID
		if err := sc.Validate(); err != nil {
			return domain.Schedule{}, err
		}
		if sc.WorkflowID != old.WorkflowID || !domain.SameJSON(domain.OrNull(sc.Input), domain.OrNull(old.Input)) || old.Paused && !sc.Paused {
			if err := s.checkWorkflow(ctx, sc.ScheduleSpec); err != nil {
				return domain.Schedule{}, err
			}
		}
		if sc.Same(old.ScheduleSpec) {
			return old, nil
		}
		now := s.now()
		sc.UpdatedAt = now
		replan := !sc.SameTiming(old.ScheduleSpec)
		if replan {
			if err := s.plan(&sc, now); err != nil {
				return domain.Schedule{}, err
			}
		}
		out, err := s.store.UpdateSchedule(ctx, sc, replan, audit)
		var ce *domain.ConflictError
		if errors.As(err, &ce) && attempt < 3 {
			continue
		}
		if err == nil {
			s.poke()
		}
		return out, err
	}
}

// Put creates the schedule spec describes, or brings the one of its id to
// it (its history kept): for a program that declares its schedules each
// time it starts. created says which. An existing schedule stays paused
// or not as its admins left it: the program declares what it does, they
// say whether it runs.
func (s *Scheduler) Put(ctx context.Context, spec domain.ScheduleSpec, by string, audit *domain.AuditEntry) (sc domain.Schedule, created bool, err error) {
	sc, err = s.Create(ctx, spec, by, audit)
	var ce *domain.ConflictError
	if !errors.As(err, &ce) {
		return sc, err == nil, err
	}
	sc, err = s.Update(ctx, spec.ID, func(old *domain.ScheduleSpec) error {
		paused := old.Paused
		*old = spec
		old.Paused = paused
		return nil
	}, audit)
	return sc, false, err
}

// ReplaceWorkflowSchedules makes the schedules of workflowID's document
// those specs says, as registering a new version of it does: new ones
// are created, changed ones changed, and those it no longer carries
// deleted.
func (s *Scheduler) ReplaceWorkflowSchedules(ctx context.Context, workflowID string, specs []domain.ScheduleSpec, by string) error {
	now := s.now()
	want := make([]domain.Schedule, len(specs))
	for i, spec := range specs {
		spec.WorkflowID = workflowID
		if err := s.Check(ctx, &spec); err != nil {
			return fmt.Errorf("schedule %s: %w", spec.ID, err)
		}
		want[i] = domain.Schedule{ScheduleSpec: spec, Source: domain.ScheduleFromWorkflow, CreatedBy: by, CreatedAt: now, UpdatedAt: now}
		if err := s.plan(&want[i], now); err != nil {
			return err
		}
	}
	err := s.store.ReplaceWorkflowSchedules(ctx, workflowID, want, nil)
	if err == nil {
		s.poke()
	}
	return err
}

// Delete removes the schedule id; the runs it started stay.
func (s *Scheduler) Delete(ctx context.Context, id string, audit *domain.AuditEntry) error {
	return s.store.DeleteSchedule(ctx, id, audit)
}

// Trigger starts a run of the schedule id now, as a fire would, whatever
// its overlap policy and even while it is paused: a person asked for it.
// The calendar's fires go on as before.
func (s *Scheduler) Trigger(ctx context.Context, id string, by domain.User) (domain.Run, error) {
	sc, err := s.store.Schedule(ctx, id)
	if err != nil {
		return domain.Run{}, err
	}
	at := s.now().Truncate(time.Millisecond)
	nr, err := s.newRun(ctx, sc, at)
	if err != nil {
		return domain.Run{}, err
	}
	req := domain.FireRequest{ScheduleID: id, Now: at,
		Fires: []domain.ScheduleFire{{At: at, Outcome: domain.FireStarted, Manual: true, By: by.Email, ByID: by.ID, Run: &nr}}}
	a := s.e.apply(ctx, domain.Transition{Fire: &req})
	if a.Err != nil {
		return domain.Run{}, a.Err
	}
	s.e.Metrics.fired(a.Fires)
	return s.e.store.Run(ctx, a.Run.ID)
}

// newRun is the run a fire of sc at at starts: the latest version of its
// workflow, in the schedule's name, keyed by the fire time.
func (s *Scheduler) newRun(ctx context.Context, sc domain.Schedule, at time.Time) (domain.NewRun, error) {
	return s.e.newRun(ctx, domain.ScheduleStarter(sc.ID), sc.WorkflowID, domain.ScheduleInput(sc.Input, at), domain.ScheduleRunKey(sc.ID, at), "")
}

// FireDue claims the schedules due now and commits their fires; it
// returns how many schedules it claimed.
func (s *Scheduler) FireDue(ctx context.Context) (int, error) {
	now := s.now()
	claimed, err := s.store.ClaimSchedules(ctx, s.e.o.WorkerID, now, s.Lease, s.Batch)
	if err != nil || len(claimed) == 0 {
		return 0, err
	}
	batch := make([]domain.Transition, 0, len(claimed))
	for _, sc := range claimed {
		req, err := s.fires(ctx, sc, now)
		if err != nil {
			s.e.log.WarnContext(ctx, "A schedule could not be planned; it is looked at again when its claim ends", "schedule", sc.ID, "error", err)
			continue
		}
		batch = append(batch, domain.Transition{Fire: req})
	}
	if len(batch) == 0 {
		return len(claimed), nil
	}
	// One batch for the claim: on PostgreSQL its fires commit set based,
	// a statement for each kind of row whatever their number.
	for i, a := range s.e.store.Apply(context.WithoutCancel(ctx), batch) {
		if a.Err != nil && !errors.Is(a.Err, domain.ErrStale) {
			s.e.log.WarnContext(ctx, "A schedule's fires could not be committed; they are decided again when its claim ends",
				"schedule", batch[i].Fire.ScheduleID, "error", a.Err)
		}
		s.e.Metrics.fired(a.Fires)
	}
	return len(claimed), nil
}

// fires decides what sc's due fires come to and makes the runs of those
// that start; a run that cannot start (its workflow gone, its input no
// longer suiting it) is a failed fire, and the schedule goes on. Any
// other error leaves the schedule to be decided again once its claim
// ends.
func (s *Scheduler) fires(ctx context.Context, sc domain.Schedule, now time.Time) (*domain.FireRequest, error) {
	r, err := sc.Rule()
	if err != nil {
		return nil, err
	}
	p := domain.PlanFires(sc, r, now)
	for i := range p.Fires {
		f := &p.Fires[i]
		if f.Outcome != domain.FireStarted {
			continue
		}
		nr, err := s.newRun(ctx, sc, f.At)
		var ve *domain.ValidationError
		if err != nil && !errors.As(err, &ve) && !errors.Is(err, domain.ErrNotFound) {
			return nil, err // the registry's store failing: decided again
		}
		if err != nil {
			f.Outcome, f.Message = domain.FireFailed, err.Error()
			continue
		}
		f.Run = &nr
	}
	return &domain.FireRequest{ScheduleID: sc.ID, Attempt: sc.Attempt, Worker: s.e.o.WorkerID, Fires: p.Fires,
		NextFireAt: p.NextFireAt, DueAt: p.DueAt, BufferedAt: p.BufferedAt, Now: now}, nil
}

// Run fires due schedules until ctx ends: at once while claims take some,
// else when the earliest schedule is due, a schedule changes here, or a
// second passes (for schedules changed on other servers, and claims that
// ran out: a schedule another server holds is not due here until its
// lease ends). It claims only once a read has found something due. On a database that commits in parallel it
// runs a loop for each of the engine's commit lanes, each claiming its
// own schedules, so that one claim is planned while another commits.
func (s *Scheduler) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range max(s.e.o.CommitLanes, 1) {
		wg.Go(func() { s.loop(ctx) })
	}
	wg.Wait()
	return nil
}

func (s *Scheduler) loop(ctx context.Context) {
	for ctx.Err() == nil {
		// A read first: a claim writes, and on the embedded database
		// every write waits for the engine's writer.
		wait := max(s.e.o.PollInterval, schedulePoll)
		next, err := s.store.NextScheduleDue(ctx, s.now())
		switch {
		case err != nil:
			if ctx.Err() == nil {
				s.e.log.WarnContext(ctx, "Reading when schedules are due failed; trying again", "error", err)
			}
		case next.IsZero():
		case !next.After(s.now()):
			n, err := s.FireDue(ctx)
			if err != nil && ctx.Err() == nil {
				s.e.log.WarnContext(ctx, "Firing schedules failed; trying again", "error", err)
			}
			if n >= s.Batch {
				s.poke() // more may be due: the other lanes help
			}
			if n > 0 {
				continue
			}
			wait = 10 * time.Millisecond // another lane's claim holds them
		default:
			wait = min(wait, time.Until(next))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// schedulePoll is how often a scheduler with nothing due looks again, for
// schedules made or changed on other servers (a change here wakes it).
const schedulePoll = time.Second
