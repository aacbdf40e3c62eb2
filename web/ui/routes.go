// Package ui is Tollgate's web app: the pages where reviewers decide,
// founders answer and upload, and admins look after runs, schedules,
// people and the audit log. Its handlers render views' templ components
// and call the same engine methods as the JSON API (web/api), with the
// sessions and authorisation of package web.
package ui

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
	"github.com/tollgatehq/tollgate/web"
)

// Routes routes the web app's pages: the server's web.Room for them (its
// sign-in pages are the server's own).
func Routes(srv *web.Server, m *web.Mux) {
	s := &pages{srv}
	if s.UIStore == nil {
		return
	}
	page := m.Page
	if s.Links != nil {
		page("GET /links/{token}", s.linkPage)
		page("POST /links/{token}", s.decideByLink)
	}
	page("GET /{$}", s.SignedIn(nil, s.home))
	page("GET /inbox", s.SignedIn(domain.Role.Staff, s.inbox))
	page("GET /my", s.SignedIn(web.FounderOnly, s.my))
	page("GET /suspensions/{id}", s.SignedIn(nil, s.suspensionPage))
	page("POST /suspensions/{id}/resume", s.SignedIn(nil, s.resumeFromPage))
	page("POST /suspensions/{id}/decide", s.SignedIn(nil, s.decideFromPage))
	page("POST /suspensions/{id}/documents", s.SignedIn(nil, s.uploadDocuments))
	page("GET /documents/{id}", s.SignedIn(nil, s.downloadDocument))
	page("GET /account", s.SignedIn(nil, s.accountPage))
	page("POST /account/password", s.SignedIn(nil, s.changePassword))
	if s.MailPrefs != nil {
		page("POST /account/mail", s.SignedIn(nil, s.setMailPreference))
	}
	page("GET /runs", s.SignedIn(domain.Role.Staff, s.runsPage))
	page("GET /admin/audit", s.SignedIn(web.AdminOnly, s.auditPage))
	page("GET /admin/audit/export", s.SignedIn(web.AdminOnly, s.auditExport))
	if s.Schedules != nil {
		page("GET /admin/schedules", s.SignedIn(web.AdminOnly, s.schedulesPage))
		page("GET /admin/schedules/{id}", s.SignedIn(web.AdminOnly, s.schedulePage))
		page("GET /admin/schedules/{id}/pause", s.SignedIn(web.AdminOnly, s.confirmSchedulePause(true)))
		page("POST /admin/schedules/{id}/pause", s.SignedIn(web.AdminOnly, s.pauseFromPage(true)))
		page("GET /admin/schedules/{id}/resume", s.SignedIn(web.AdminOnly, s.confirmSchedulePause(false)))
		page("POST /admin/schedules/{id}/resume", s.SignedIn(web.AdminOnly, s.pauseFromPage(false)))
		page("POST /admin/schedules/{id}/trigger", s.SignedIn(web.AdminOnly, s.triggerFromPage))
	}
	page("GET /admin/users", s.SignedIn(web.AdminOnly, s.usersPage))
	page("POST /admin/users", s.SignedIn(web.AdminOnly, s.inviteUser))
	page("POST /admin/users/{id}", s.SignedIn(web.AdminOnly, s.updateUser))
	page("GET /admin/users/{id}/disable", s.SignedIn(web.AdminOnly, s.confirmDisableUser))
	page("POST /admin/users/{id}/reset", s.SignedIn(web.AdminOnly, s.issueResetLink))
	page("POST /admin/keys", s.SignedIn(web.AdminOnly, s.createKey))
	page("GET /admin/keys/{id}/revoke", s.SignedIn(web.AdminOnly, s.confirmRevokeKey))
	page("POST /admin/keys/{id}/revoke", s.SignedIn(web.AdminOnly, s.revokeKey))
	page("GET /runs/{id}", s.SignedIn(domain.Role.Staff, s.runPage))
	page("GET /runs/{id}/cancel", s.SignedIn(web.AdminOnly, s.confirmCancelRun))
	page("POST /runs/{id}/cancel", s.SignedIn(web.AdminOnly, s.cancelFromPage))
	page("POST /runs/{id}/retry", s.SignedIn(web.AdminOnly, s.retryFromPage))
	page("POST /runs/bulk", s.SignedIn(web.AdminOnly, s.bulkFromRuns))
	page("POST /inbox/bulk", s.SignedIn(domain.Role.Staff, s.bulkFromInbox))
	page("POST /runs/{id}/rerun", s.SignedIn(domain.Role.Staff, s.rerunFromPage))
	page("GET /runs/{id}/delete", s.SignedIn(web.AdminOnly, s.confirmDeleteRun))
	page("POST /runs/{id}/delete", s.SignedIn(web.AdminOnly, s.deleteFromPage))
	m.Fallback("/", web.UIHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.RenderError(w, r, http.StatusNotFound, "Page not found", "There is no page at this address. It may have moved, or the link may be mistyped.", s.ViewerOf(r))
	})))
}

// home sends each role to where its work is.
func (s *pages) home(w http.ResponseWriter, r *http.Request) {
	if s.ViewerOf(r).Staff() {
		http.Redirect(w, r, "/inbox", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/my", http.StatusSeeOther)
}

func (s *pages) inbox(w http.ResponseWriter, r *http.Request) {
	f, cursor := inboxFilterOf(r.URL.Query())
	if v := s.ViewerOf(r); v == nil || v.Role != domain.RoleAdmin {
		f.Machine = false // machine waits are for admins to see
	}
	items, next, err := s.Store.Suspensions(r.Context(), s.pendingIn(f, cursor, 50))
	var ve *domain.ValidationError
	if errors.As(err, &ve) {
		s.RenderError(w, r, http.StatusBadRequest, "That page link is not valid", "The link to this page of the inbox is damaged or out of date. Start again from the first page.", s.ViewerOf(r))
		return
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	pairs, err := s.UIStore.PendingCountsWhere(r.Context(), s.pendingIn(f, "", 0))
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	p := views.InboxPage{Viewer: s.ViewerOf(r), Filter: f, Now: s.Clock.Now()}
	if r.URL.Query().Get("done") == "all" && !anyFor(items, web.ViewerPrincipal(p.Viewer).User) {
		p.Notice = "All done: nothing else here waits for you."
	}
	labels := map[string]string{}
	fm, from := web.FormatterFor(r), f.Values(cursor).Encode()
	for _, sp := range items {
		p.Items = append(p.Items, inboxRow(sp, fm, from, p.Now))
		if _, ok := labels[sp.Reason]; !ok {
			labels[sp.Reason] = sp.ReasonName()
		}
	}
	reasons, kinds, total := filteredCounts(pairs, f)
	for _, c := range reasons {
		label, ok := labels[c.Name]
		if !ok {
			label = domain.ReasonLabelOf(c.Name)
		}
		p.Reasons = append(p.Reasons, views.Count{Name: c.Name, Label: label, N: c.N})
	}
	for _, c := range kinds {
		p.Kinds = append(p.Kinds, views.Count{Name: c.Name, Label: views.KindName(domain.SuspensionKind(c.Name)), N: c.N})
	}
	p.Total = total
	if next != "" {
		p.Next = f.Query(next)
	}
	s.Render(w, r, http.StatusOK, views.Inbox(p))
}

// anyFor reports whether u may act on one of items: then "All done" is no
// longer true, as a request has come for them since.
func anyFor(items []domain.Suspension, u domain.User) bool {
	return slices.ContainsFunc(items, func(sp domain.Suspension) bool {
		return sp.Kind.WaitsForPerson() && sp.CheckActor(u) == nil
	})
}

// filteredCounts sums the inbox's counts from pairs of reason and kind
// under filter f: each reason's under f's kind, each kind's under f's
// reason (the choices beside the list), and the total both select, which
// is what the list shows.
func filteredCounts(pairs []domain.PairCount, f views.InboxFilter) (reasons, kinds []domain.GroupCount, total int) {
	byReason, byKind := map[string]int{}, map[string]int{}
	for _, c := range pairs {
		kindOK, reasonOK := f.Kind == "" || string(c.Kind) == f.Kind, f.Reason == "" || c.Reason == f.Reason
		if kindOK {
			byReason[c.Reason] += c.N
		}
		if reasonOK {
			byKind[string(c.Kind)] += c.N
		}
		if kindOK && reasonOK {
			total += c.N
		}
	}
	return domain.SortedCounts(byReason), domain.SortedCounts(byKind), total
}

var inboxAges = map[string]time.Duration{"": 0, "1h": time.Hour, "1d": 24 * time.Hour, "7d": 7 * 24 * time.Hour}

func inboxItem(sp domain.Suspension, now time.Time) views.InboxItem {
	it := views.InboxItem{ID: sp.ID, RunID: sp.RunID, WorkflowID: sp.WorkflowID, WorkflowVersion: sp.WorkflowVersion,
		StepName: sp.StepName, Title: sp.Title, Reason: sp.Reason, Kind: string(sp.Kind), Assignee: sp.Assignee, SuspendedAt: sp.SuspendedAt}
	if sp.Kind == domain.KindApproval && sp.Policy.Several() {
		it.Votes = views.VoteTally(domain.TallyOf(sp.Policy, sp.Votes)).Summary()
	}
	it.Escalation = domain.NextEscalation(sp, now)
	return it
}

// pages is the server as the pages' handlers see it.
type pages struct{ *web.Server }
