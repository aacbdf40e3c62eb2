package ui

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// recentlyDone is how many finished requests My requests shows under the
// waiting ones.
const recentlyDone = 10

// my lists a founder's requests: the waiting ones first, soonest deadline
// first and then oldest first, then the few most recently finished. The
// assignee filter runs in SQL, so no other founder's request is read.
func (s *pages) my(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	pending, _, err := s.Store.Suspensions(r.Context(), domain.SuspensionFilter{Status: domain.SuspensionPending, Assignee: v.Email, Limit: 200})
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	done, err := s.finishedRequests(r.Context(), v.Email)
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	slices.SortStableFunc(pending, byDeadline)
	s.Render(w, r, http.StatusOK, views.My(views.MyPage{Viewer: v, Pending: pending, Done: done, UploadLimit: s.FileLimit(), Now: s.Clock.Now()}))
}

// finishedRequests are the founder's most recently finished requests,
// whichever way they ended, latest first.
func (s *pages) finishedRequests(ctx context.Context, email string) ([]domain.Suspension, error) {
	var done []domain.Suspension
	for _, st := range []domain.SuspensionStatus{domain.SuspensionResumed, domain.SuspensionExpired, domain.SuspensionCancelled} {
		ss, _, err := s.Store.Suspensions(ctx, domain.SuspensionFilter{Status: st, Assignee: email, Newest: true, Limit: recentlyDone})
		if err != nil {
			return nil, err
		}
		done = append(done, ss...)
	}
	slices.SortStableFunc(done, func(a, b domain.Suspension) int { return endedAt(b).Compare(endedAt(a)) })
	return done[:min(len(done), recentlyDone)], nil
}

// endedAt is when a request finished: when it was answered, else (a
// cancelled one) when it was asked.
func endedAt(s domain.Suspension) time.Time {
	if s.ResumedAt != nil {
		return *s.ResumedAt
	}
	return s.SuspendedAt
}

// byDeadline orders requests with a deadline before those without,
// sooner deadlines first; the rest keep their order.
func byDeadline(a, b domain.Suspension) int {
	da, db := views.Deadline(a), views.Deadline(b)
	switch {
	case da != nil && db != nil:
		return da.Compare(*db)
	case da != nil:
		return -1
	case db != nil:
		return 1
	}
	return 0
}
