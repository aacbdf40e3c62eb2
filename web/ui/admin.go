package ui

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
	"github.com/tollgatehq/tollgate/web"
)

// auditFilter reads the audit page's filter. Dates are whole UTC days;
// "to" includes its day.
func auditFilter(r *http.Request) (views.AuditFilterForm, domain.AuditFilter, error) {
	q := r.URL.Query()
	form := views.AuditFilterForm{Actor: strings.TrimSpace(q.Get("actor")), Category: q.Get("category"), Action: strings.TrimSpace(q.Get("action")),
		Workflow: strings.TrimSpace(q.Get("workflow")), From: q.Get("from"), To: q.Get("to")}
	f := domain.AuditFilter{ActorEmail: strings.ToLower(form.Actor), Action: form.Action, WorkflowID: form.Workflow, Cursor: q.Get("cursor")}
	if form.Category != "" {
		actions, ok := domain.AuditCategoryActions(form.Category)
		if !ok {
			form.Category = ""
			return form, f, errors.New("choose one of the kinds of entry in the list")
		}
		f.Actions = actions
	}
	if form.From != "" {
		t, err := time.Parse(time.DateOnly, form.From)
		if err != nil {
			return form, f, errors.New("“From” is not a date like 2026-11-21")
		}
		f.From = t
	}
	if form.To != "" {
		t, err := time.Parse(time.DateOnly, form.To)
		if err != nil {
			return form, f, errors.New("“To” is not a date like 2026-11-21")
		}
		f.To = t.AddDate(0, 0, 1)
	}
	return form, f, nil
}

func (s *pages) auditPage(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	form, f, err := auditFilter(r)
	p := views.AuditPage{Viewer: v, Filter: form}
	if err != nil {
		p.Failure = "Cannot filter: " + err.Error() + "."
		s.Render(w, r, http.StatusBadRequest, views.Audit(p))
		return
	}
	f.Limit = 100
	entries, next, err := s.UIStore.Audit(r.Context(), f)
	var ve *domain.ValidationError
	if errors.As(err, &ve) {
		p.Failure = "The link to this page of the audit log is damaged or out of date."
		s.Render(w, r, http.StatusBadRequest, views.Audit(p))
		return
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	names, err := s.auditNames(r, entries)
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	for _, e := range entries {
		p.Rows = append(p.Rows, views.NewAuditRow(e, names))
	}
	if next != "" {
		p.Next = "/admin/audit?" + form.Query("cursor", next)
	}
	s.Render(w, r, http.StatusOK, views.Audit(p))
}

// auditNames looks up the people, keys and requests a page of entries
// refers to: every user and key (an admin's lists, small), and the titles
// of the suspensions named, in one query.
func (s *pages) auditNames(r *http.Request, entries []domain.AuditEntry) (views.AuditNames, error) {
	n := views.AuditNames{Users: map[string]domain.User{}, ByEmail: map[string]domain.User{}, Keys: map[string]domain.APIKey{}}
	users, err := s.UIStore.Users(r.Context())
	if err != nil {
		return n, err
	}
	for _, u := range users {
		n.Users[u.ID], n.ByEmail[u.Email] = u, u
	}
	keys, err := s.UIStore.APIKeys(r.Context(), "")
	if err != nil {
		return n, err
	}
	for _, k := range keys {
		n.Keys[k.ID] = k
	}
	var ids []string
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Action, "suspension."):
			ids = append(ids, e.Subject)
		case e.Action == "document.upload":
			var d struct {
				SuspensionID string `json:"suspensionId"`
			}
			if json.Unmarshal(e.Data, &d) == nil && d.SuspensionID != "" {
				ids = append(ids, d.SuspensionID)
			}
		}
	}
	slices.Sort(ids)
	n.Titles, err = s.UIStore.SuspensionTitles(r.Context(), slices.Compact(ids))
	return n, err
}

// auditExport streams every entry the filter selects, newest first, as CSV
// or JSON Lines, page by page so that a large log is never held in memory.
func (s *pages) auditExport(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	_, f, err := auditFilter(r)
	format := r.URL.Query().Get("format")
	if err == nil && format != "csv" && format != "jsonl" {
		err = errors.New("choose the csv or jsonl format")
	}
	if err != nil {
		s.RenderError(w, r, http.StatusBadRequest, "Cannot export", err.Error(), v)
		return
	}
	name := "tollgate-audit-" + s.Clock.Now().UTC().Format("20060102-150405")
	h := w.Header()
	h.Set("Cache-Control", "private, no-store")
	var cw *csv.Writer
	enc := json.NewEncoder(w)
	if format == "csv" {
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
		cw = csv.NewWriter(w)
		_ = cw.Write([]string{"id", "at", "actor_id", "actor_email", "action", "subject", "workflow_id", "address", "data"})
	} else {
		h.Set("Content-Type", "application/jsonl; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="`+name+`.jsonl"`)
	}
	s.Audit(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "audit.export", Data: web.AuditData(map[string]any{"format": format, "query": r.URL.RawQuery})})
	for e, err := range s.AuditEntries(r.Context(), f) {
		if err != nil {
			// Headers are gone: the truncated file is all that can be said.
			s.Log.ErrorContext(r.Context(), "Audit export failed", "error", err)
			break
		}
		if cw != nil {
			_ = cw.Write([]string{strconv.FormatInt(e.ID, 10), e.At.UTC().Format(time.RFC3339Nano), e.ActorID, csvSafe(e.ActorEmail), csvSafe(e.Action),
				csvSafe(e.Subject), csvSafe(e.WorkflowID), e.Address, csvSafe(string(e.Data))})
		} else {
			_ = enc.Encode(map[string]any{"id": e.ID, "at": e.At.UTC(), "actorId": e.ActorID, "actorEmail": e.ActorEmail, "action": e.Action,
				"subject": e.Subject, "workflowId": e.WorkflowID, "address": e.Address, "data": e.Data})
		}
	}
	if cw != nil {
		cw.Flush()
	}
}

// csvSafe keeps a cell from being read as a formula by a spreadsheet.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
