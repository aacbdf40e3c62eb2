package web

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// maxDecisionWait bounds ?wait= on a decision or resume.
const maxDecisionWait = 30 * time.Second

// nextJSON is what a run did after a decision or resume, within the wait
// its caller asked for (?wait=5s): paused on its next request (and whether
// that is the caller's to act on), finished with its output, failed with
// its error, or still running when the wait ran out. The run's id, output
// and error are for staff (see nextOf).
type nextJSON struct {
	RunID  string           `json:"runId,omitempty"`
	Status domain.RunStatus `json:"status"`
	// Request is the run's next pending request, when it paused on one
	// (as suspensionFor shapes it, with its id in RequestID); ForYou says
	// whether the caller may act on it.
	Request   any              `json:"request,omitempty"`
	RequestID string           `json:"-"`
	ForYou    bool             `json:"forYou"`
	Output    json.RawMessage  `json:"output,omitempty"`
	Error     *domain.RunError `json:"error,omitempty"`
}

// WithNext is a suspension as a decision or resume answers it (as
// suspensionFor shapes it), with what its run did next when the caller
// waited for it: the suspension's members, then next.
type WithNext struct {
	Suspension any
	Next       *nextJSON
}

func (wn WithNext) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(wn.Suspension)
	if err != nil || wn.Next == nil {
		return b, err
	}
	n, err := json.Marshal(wn.Next)
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"next":`...) // b is an object, never empty
	return append(append(b, n...), '}'), nil
}

// DecisionWait reads ?wait=, how long a decision or resume waits for what
// its run does next, and returns when that wait ends, counted from the
// request's arrival: the zero time when absent or 0s.
func DecisionWait(r *http.Request) (time.Time, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return time.Time{}, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > maxDecisionWait {
		return time.Time{}, &domain.ValidationError{Code: CodeInvalidQuery, Message: "wait is how long to wait for what the run does next: a duration up to 30s, like 5s.",
			Fields: []domain.FieldError{domain.QueryError("wait", "must be a duration from 0s to 30s, like 5s")}}
	}
	if d == 0 {
		return time.Time{}, nil
	}
	return arrivedAt(r.Context()).Add(d), nil
}

// nextPoll is how often a wait reads its run when no change notice
// comes: notices can be lost, but they are what a wait mostly follows,
// so that many waits at once do not queue the database's reads.
const nextPoll = time.Second

// nextWatch follows a run from before a decision or resume of one of its
// requests until what came of it is known (see next), or its deadline.
type nextWatch struct {
	s        *Server
	runID    string
	deadline time.Time
	changed  <-chan struct{}
	Stop     func()
}

// WatchNext starts following run runID until deadline; subscribed before
// the action, so that no change falls between.
func (s *Server) WatchNext(ctx context.Context, runID string, deadline time.Time) *nextWatch {
	changed, stop := s.WatchRun(ctx, runID)
	return &nextWatch{s: s, runID: runID, deadline: deadline, changed: changed, Stop: stop}
}

// Next waits, after request decided was resolved, for the run to finish
// or to pause with nothing left executing, and says where it is: its
// next pending request (one u may act on first), its result, or that it
// still runs. A vote that left the request pending answers at once. The
// deadline bounds every read as well as the wait, so that the answer
// comes by then however busy the database is: with the run as last read,
// or, when no read finished in time, as the resolution left it.
func (nw *nextWatch) Next(ctx context.Context, decided domain.Suspension, u domain.User) (*nextJSON, error) {
	defer nw.Stop()
	ctx, cancel := context.WithDeadline(ctx, nw.deadline)
	defer cancel()
	assumed := domain.Run{ID: nw.runID, Status: domain.RunRunning}
	if decided.Status == domain.SuspensionPending {
		assumed.Status = domain.RunSuspended
	}
	last := nw.s.nextOf(assumed, nil, u)
	poll := time.NewTicker(nextPoll)
	defer poll.Stop()
	for {
		n, settled, err := nw.look(ctx, decided, u)
		switch {
		case err != nil && ctx.Err() != nil:
			return last, nil
		case err != nil:
			return nil, err
		case settled:
			return n, nil
		}
		last = n
		select {
		case <-ctx.Done():
			return last, nil
		case <-nw.changed:
		case <-poll.C:
		}
	}
}

// look reads the run once and says where it is for u, and whether that
// settles the wait: finished, paused, or still paused on decided (a
// vote). Pending requests are read only then: a running run is answered
// as running.
func (nw *nextWatch) look(ctx context.Context, decided domain.Suspension, u domain.User) (*nextJSON, bool, error) {
	run, err := nw.s.Store.Run(ctx, nw.runID)
	if err != nil {
		return nil, false, err
	}
	settled := run.Status.Terminal() || run.Status == domain.RunSuspended || decided.Status == domain.SuspensionPending
	if !settled || run.Status.Terminal() {
		return nw.s.nextOf(run, nil, u), settled, nil
	}
	pending, _, err := nw.s.Store.Suspensions(ctx, domain.SuspensionFilter{RunID: nw.runID, Status: domain.SuspensionPending, Limit: 50})
	if err != nil {
		return nil, false, err
	}
	pending = slices.DeleteFunc(pending, func(p domain.Suspension) bool { return p.ID == decided.ID })
	return nw.s.nextOf(run, pending, u), true, nil
}

// nextOf says where run is for u: paused on pending (the first request u
// may act on, else the first), finished, or running. Staff also see the
// run's id, its output and its error; a founder, who knows the run only
// by its requests, sees its status.
func (s *Server) nextOf(run domain.Run, pending []domain.Suspension, u domain.User) *nextJSON {
	n := &nextJSON{Status: run.Status}
	if u.Role.Staff() {
		n.RunID, n.Error = run.ID, run.Error
		if run.Status == domain.RunSucceeded {
			n.Output = domain.OrNull(run.Output)
		}
	}
	if len(pending) == 0 {
		return n
	}
	i := slices.IndexFunc(pending, func(p domain.Suspension) bool { return p.CheckActor(u) == nil })
	n.ForYou = i >= 0
	if i < 0 {
		i = 0
	}
	if pending[i].MayRead(u) {
		n.Request, n.RequestID = s.suspensionFor(u, pending[i]), pending[i].ID
	}
	return n
}
