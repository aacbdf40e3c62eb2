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
// its error, or still running when the wait ran out.
type nextJSON struct {
	RunID  string           `json:"runId"`
	Status domain.RunStatus `json:"status"`
	// Request is the run's next pending request, when it paused on one;
	// ForYou says whether the caller may act on it.
	Request *suspensionJSON  `json:"request,omitempty"`
	ForYou  bool             `json:"forYou"`
	Output  json.RawMessage  `json:"output,omitempty"`
	Error   *domain.RunError `json:"error,omitempty"`
}

// withNext is a suspension as a decision or resume answers it, with what
// its run did next when the caller waited for it.
type withNext struct {
	suspensionJSON
	Next *nextJSON `json:"next,omitempty"`
}

// decisionWait reads ?wait=, how long a decision or resume waits for what
// its run does next: 0 when absent.
func decisionWait(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > maxDecisionWait {
		return 0, &domain.ValidationError{Code: CodeInvalidQuery, Message: "wait is how long to wait for what the run does next: a duration up to 30s, like 5s.",
			Fields: []domain.FieldError{domain.QueryError("wait", "must be a duration from 0s to 30s, like 5s")}}
	}
	return d, nil
}

// nextWatch follows a run from before a decision or resume of one of its
// requests until what came of it is known (see next).
type nextWatch struct {
	s       *Server
	runID   string
	changed <-chan struct{}
	stop    func()
}

// watchNext starts following run runID; subscribed before the action, so
// that no change falls between.
func (s *Server) watchNext(runID string) *nextWatch {
	changed, stop := s.watch.subscribe(runID)
	return &nextWatch{s: s, runID: runID, changed: changed, stop: stop}
}

// next waits up to wait, after request decided was resolved, for the run
// to finish or to pause with nothing left executing, and says where it
// is: its next pending request (one u may act on first), its result, or
// that it still runs. A vote that left the request pending, or a wait of
// zero, answers at once with the run as it is.
func (nw *nextWatch) next(ctx context.Context, decided domain.Suspension, u domain.User, wait time.Duration) (*nextJSON, error) {
	defer nw.stop()
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	poll := time.NewTicker(250 * time.Millisecond) // a notification can be lost
	defer poll.Stop()
	for {
		run, err := nw.s.Store.Run(context.WithoutCancel(ctx), nw.runID)
		if err != nil {
			return nil, err
		}
		pending, _, err := nw.s.Store.Suspensions(context.WithoutCancel(ctx), domain.SuspensionFilter{RunID: nw.runID, Status: domain.SuspensionPending, Limit: 50})
		if err != nil {
			return nil, err
		}
		pending = slices.DeleteFunc(pending, func(p domain.Suspension) bool { return p.ID == decided.ID })
		settled := run.Status.Terminal() || run.Status == domain.RunSuspended || decided.Status == domain.SuspensionPending
		if settled || ctx.Err() != nil {
			return nw.s.nextOf(run, pending, u), nil
		}
		select {
		case <-ctx.Done():
		case <-nw.changed:
		case <-poll.C:
		}
	}
}

// nextOf says where run is for u: paused on pending (the first request u
// may act on, else the first), finished, or running.
func (s *Server) nextOf(run domain.Run, pending []domain.Suspension, u domain.User) *nextJSON {
	n := &nextJSON{RunID: run.ID, Status: run.Status, Error: run.Error}
	if run.Status == domain.RunSucceeded {
		n.Output = domain.OrNull(run.Output)
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
		v := suspensionView(pending[i])
		n.Request = &v
	}
	return n
}
