package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// A reviewer works through a queue: the inbox filter they opened a request
// from. The request page carries that filter (its query, "from"), so that
// "Approve & next" and the j/k keys move along the same list, from the
// inbox page the reviewer was on.

// queueWindow is how many requests of a filter are read to find the
// neighbours of one: the inbox page it was opened from and the next.
const queueWindow = 100

// inboxFilterOf reads an inbox filter and its page cursor from a query.
// An age the inbox does not offer is dropped.
func inboxFilterOf(q url.Values) (views.InboxFilter, string) {
	f := views.InboxFilter{Reason: q.Get("reason"), Kind: q.Get("kind"), WorkflowID: strings.TrimSpace(q.Get("workflow")),
		Age: q.Get("age"), Search: strings.TrimSpace(q.Get("q")), Newest: q.Get("order") == "newest",
		Machine: q.Get("waits") == string(domain.WaitsMachine)}
	if _, ok := inboxAges[f.Age]; !ok {
		f.Age = ""
	}
	return f, q.Get("cursor")
}

// pendingIn is the store's filter for a page of an inbox filter.
func (s *pages) pendingIn(f views.InboxFilter, cursor string, limit int) domain.SuspensionFilter {
	sf := domain.SuspensionFilter{Status: domain.SuspensionPending, Reason: f.Reason, Kind: domain.SuspensionKind(f.Kind), WorkflowID: f.WorkflowID,
		Search: f.Search, Newest: f.Newest, Cursor: cursor, Limit: limit, Waits: inboxWaits(f)}
	if age := inboxAges[f.Age]; age > 0 {
		sf.SuspendedBefore = s.Clock.Now().Add(-age)
	}
	return sf
}

// inboxWaits is what an inbox filter lists: the requests people are asked,
// unless it asks for the waits machines resume.
func inboxWaits(f views.InboxFilter) domain.Waits {
	if f.Machine {
		return domain.WaitsMachine
	}
	return domain.WaitsPerson
}

// inboxRow is a suspension as an inbox row, formatted for the viewer and
// linked with the filter it was listed under.
func inboxRow(sp domain.Suspension, fm domain.Formatter, from string, now time.Time) views.InboxItem {
	it := inboxItem(sp, now)
	it.ReasonLabel, it.Fields, it.Action, it.For = sp.ReasonName(), fm.Fields(sp.Fields), views.ActionOf(sp), views.ForWhom(sp)
	it.Href = requestURL(sp.ID, from)
	return it
}

// requestURL is a request's page, carrying the inbox query it belongs to.
func requestURL(id, from string) string {
	u := views.SuspensionURL(id)
	if from != "" {
		u += "?from=" + url.QueryEscape(from)
	}
	return u
}

// queue is the part of a filter around one request that a person may act
// on, in the filter's order.
type queue struct {
	ids   []string
	found bool // whether the request itself is among them
	at    int  // its index when found
}

// queueAround reads the filter's window that begins at the inbox page the
// request was opened from. Only requests the viewer may act on count, and
// only requests for people: a machine's wait is never next in a queue.
func (s *pages) queueAround(ctx context.Context, from url.Values, id string, u domain.User) (queue, error) {
	f, cursor := inboxFilterOf(from)
	items, _, err := s.Store.Suspensions(ctx, s.pendingIn(f, cursor, queueWindow))
	if err != nil && cursor != "" {
		// A page that no longer exists: the filter from its start.
		items, _, err = s.Store.Suspensions(ctx, s.pendingIn(f, "", queueWindow))
	}
	if err != nil {
		return queue{}, err
	}
	var q queue
	for _, sp := range items {
		if sp.ID == id {
			q.found, q.at = true, len(q.ids)
			q.ids = append(q.ids, id)
			continue
		}
		if sp.Kind.WaitsForPerson() && sp.CheckActor(u) == nil {
			q.ids = append(q.ids, sp.ID)
		}
	}
	return q, nil
}

// after lists the requests after the request, in order ("" when it was
// not in the window: then every one).
func (q queue) after() []string {
	if !q.found {
		return q.ids
	}
	return q.ids[q.at+1:]
}

// neighbours are the requests before and after the request in its queue,
// for the j and k keys; "" where there is none.
func (q queue) neighbours() (prev, next string) {
	if a := q.after(); len(a) > 0 {
		next = a[0]
	}
	if q.found && q.at > 0 {
		prev = q.ids[q.at-1]
	}
	return prev, next
}

// nextRequest finds where a person goes after deciding request id:
// the first of the requests that were after it (before the decision) that
// still waits for them, else the first that waits for them anywhere in the
// filter; "" when nothing is left.
func (s *pages) nextRequest(ctx context.Context, from url.Values, id string, before []string, u domain.User) (string, error) {
	now, err := s.queueAround(ctx, from, id, u)
	if err != nil {
		return "", err
	}
	still := map[string]bool{}
	for _, x := range now.ids {
		still[x] = true
	}
	for _, x := range before {
		if x != id && still[x] {
			return x, nil
		}
	}
	f, _ := inboxFilterOf(from)
	items, _, err := s.Store.Suspensions(ctx, s.pendingIn(f, "", queueWindow))
	if err != nil {
		return "", err
	}
	for _, sp := range items {
		if sp.ID != id && sp.Kind.WaitsForPerson() && sp.CheckActor(u) == nil {
			return sp.ID, nil
		}
	}
	return "", nil
}

// fromOf is the inbox query a request page or form carries, parsed.
func fromOf(r *http.Request) (raw string, q url.Values) {
	raw = r.FormValue("from")
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "", url.Values{}
	}
	return raw, q
}

// inboxAfterQueue is the inbox a person returns to when their queue is
// empty: the same filter, from its first page.
func inboxAfterQueue(from url.Values) string {
	f, _ := inboxFilterOf(from)
	q := f.Values("")
	q.Set("done", "all")
	return "/inbox?" + q.Encode()
}
