package api

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/web"
)

type workflowJSON struct {
	ID string `json:"id"`
	// Name is a document's display name, when it has one.
	Name    string   `json:"name,omitempty"`
	Version string   `json:"version"`
	Steps   []string `json:"steps"`
	// Source is "code" (registered in Go) or "document".
	Source    string          `json:"source"`
	Document  json.RawMessage `json:"document,omitempty"`
	CreatedBy string          `json:"createdBy,omitempty"`
	CreatedAt *time.Time      `json:"createdAt,omitempty"`
}

// listWorkflows lists the workflows in code, then every registered
// document version: those the caller's role may start. Documents are for
// staff (see definitionView).
func (s *api) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	role := web.PrincipalFrom(r.Context()).User.Role
	items := []workflowJSON{}
	for _, wf := range s.Engine.Registry().All() {
		if wf.MayStart(role) {
			items = append(items, workflowJSON{ID: wf.ID, Version: wf.Version, Steps: wf.Steps(), Source: "code"})
		}
	}
	if s.Catalog != nil {
		defs, err := s.Catalog.List(r.Context())
		if err != nil {
			return err
		}
		for _, d := range defs {
			var doc flow.Document
			_ = json.Unmarshal(d.Body, &doc) // stored documents were valid
			if !role.Staff() && !doc.AllowFounders {
				continue
			}
			item, err := definitionView(d, doc, role)
			if err != nil {
				return err
			}
			items = append(items, item)
		}
	}
	web.WriteJSON(w, http.StatusOK, web.Page[workflowJSON]{Items: items})
	return nil
}

// definitionView shows a registered document version to someone of role;
// doc is its body, parsed. Only staff see the document, and then with its
// http steps' header values masked (flow.RedactDocument): they are
// write-only.
func definitionView(d flow.Definition, doc flow.Document, role domain.Role) (workflowJSON, error) {
	steps := make([]string, len(doc.Steps))
	for i, st := range doc.Steps {
		steps[i] = st.Name
	}
	at := d.CreatedAt
	v := workflowJSON{ID: d.WorkflowID, Name: doc.Name, Version: d.Version, Steps: steps, Source: "document", CreatedBy: d.CreatedBy, CreatedAt: &at}
	if !role.Staff() {
		return v, nil
	}
	body, err := flow.RedactDocument(d.Body)
	if err != nil {
		return workflowJSON{}, fmt.Errorf("show workflow %s version %s: %w", d.WorkflowID, d.Version, err)
	}
	v.Document = body
	return v, nil
}

// registerWorkflow registers a workflow document version (admins only).
// The id and version in the path must be the document's. A version is
// immutable: the same document again answers 200, another one 409.
func (s *api) registerWorkflow(w http.ResponseWriter, r *http.Request) error {
	return s.register(w, r, func(doc json.RawMessage) error {
		if id, version := flow.Identity(doc); id != r.PathValue("workflowId") || version != r.PathValue("version") {
			return &domain.ValidationError{Code: flow.CodeInvalidWorkflow, Message: "the document's id and version must be the ones in the URL",
				Fields: []domain.FieldError{{Field: "/id", Message: "must be " + strconv.Quote(r.PathValue("workflowId"))}, {Field: "/version", Message: "must be " + strconv.Quote(r.PathValue("version"))}}}
		}
		return nil
	})
}

// createWorkflow registers a document under the id and version it states
// (admins only), so a document registers as it is written, without its
// author repeating them in the URL; otherwise as registerWorkflow.
func (s *api) createWorkflow(w http.ResponseWriter, r *http.Request) error {
	return s.register(w, r, func(json.RawMessage) error { return nil })
}

// register registers the request's document once check accepts it, and
// answers with the version: 201 with its Location when it is new.
func (s *api) register(w http.ResponseWriter, r *http.Request, check func(doc json.RawMessage) error) error {
	p := web.PrincipalFrom(r.Context())
	if p.User.Role != domain.RoleAdmin {
		return web.ErrForbidden
	}
	if s.Catalog == nil {
		return domain.ErrNotFound
	}
	var doc json.RawMessage
	if err := web.DecodeJSON(w, r, &doc, s.MaxBody); err != nil {
		return err
	}
	if err := check(doc); err != nil {
		return err
	}
	reg, err := s.Catalog.Register(r.Context(), doc, p.User.Email)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if reg.Created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/workflows/"+url.PathEscape(reg.Document.ID)+"/versions/"+url.PathEscape(reg.Document.Version))
	}
	view, err := definitionView(reg.Definition, reg.Document, p.User.Role)
	if err != nil {
		return err
	}
	web.WriteJSON(w, status, view)
	return nil
}

// startRun starts a run in the caller's name, if their role may start the
// workflow. An Idempotency-Key makes the call safe to retry: the caller's
// repeat answers with the run their first call started.
func (s *api) startRun(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Input json.RawMessage `json:"input"`
	}
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	by := domain.StarterOf(web.PrincipalFrom(r.Context()).User)
	run, created, err := s.Engine.StartAs(r.Context(), by, r.PathValue("workflowId"), body.Input, r.Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	if !created {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", "/api/v1/runs/"+run.ID)
	web.WriteJSON(w, http.StatusCreated, web.RunView(run))
	return nil
}

func (s *api) showRun(w http.ResponseWriter, r *http.Request) error {
	if !web.PrincipalFrom(r.Context()).User.Role.Staff() {
		return domain.ErrNotFound
	}
	run, ss, err := s.Store.RunWithSuspensions(r.Context(), r.PathValue("runId"))
	if err != nil {
		return err
	}
	v := web.RunView(run)
	v.Suspensions = make([]web.SuspensionJSON, len(ss))
	for i, sp := range ss {
		v.Suspensions[i] = s.WholeSuspension(web.PrincipalFrom(r.Context()).User, sp)
	}
	switch {
	case run.Status != domain.RunSuspended:
	case len(ss) < domain.RunSuspensionsLimit: // the whole list: its pending waits are all there
		v.ShowWaits(ss)
	default: // a page of a longer list may leave the pending waits out
		pending, err := s.PendingWaits(r.Context(), run.ID)
		if err != nil {
			return err
		}
		v.ShowWaits(pending)
	}
	web.WriteJSON(w, http.StatusOK, v)
	return nil
}

func (s *api) listEvents(w http.ResponseWriter, r *http.Request) error {
	if !web.PrincipalFrom(r.Context()).User.Role.Staff() {
		return domain.ErrNotFound
	}
	cursor, limit, errs := web.PageQuery(r.URL.Query(), nil)
	after, err := strconv.ParseInt(cmp.Or(cursor, "0"), 10, 64)
	if err != nil || after < 0 {
		errs = append(errs, domain.QueryError("cursor", "is not a cursor this list handed out"))
	}
	if err := web.InvalidQuery(errs); err != nil {
		return err
	}
	limit = cmp.Or(limit, defaultEventsPage)
	events, err := s.Store.EventsAfter(r.Context(), r.PathValue("runId"), after, limit)
	if err != nil {
		return err
	}
	next := ""
	if len(events) == limit {
		next = strconv.FormatInt(events[len(events)-1].Seq, 10)
	}
	web.WritePage(w, events, web.EventView, next)
	return nil
}

// defaultEventsPage is how many events a page of a run's log holds when
// the caller does not say.
const defaultEventsPage = 100

func (s *api) listRuns(w http.ResponseWriter, r *http.Request) error {
	if !web.PrincipalFrom(r.Context()).User.Role.Staff() {
		return web.ErrForbidden
	}
	q := r.URL.Query()
	f := domain.RunFilter{WorkflowID: q.Get("workflowId"), Search: q.Get("q")}
	var errs []domain.FieldError
	for _, value := range q["status"] {
		for name := range strings.SplitSeq(value, ",") {
			st, ok := domain.ParseRunStatus(strings.TrimSpace(name))
			if !ok {
				errs = append(errs, domain.QueryError("status", strconv.Quote(name)+" is not a run status: "+domain.RunStatusNames))
				continue
			}
			if !slices.Contains(f.Statuses, st) {
				f.Statuses = append(f.Statuses, st)
			}
		}
	}
	errs = web.TimeQuery(q, errs, "createdAfter", &f.CreatedAfter)
	errs = web.TimeQuery(q, errs, "createdBefore", &f.CreatedBefore)
	slices.SortFunc(errs, func(a, b domain.FieldError) int { return strings.Compare(a.Parameter, b.Parameter) })
	f.Cursor, f.Limit, errs = web.PageQuery(q, errs)
	if err := web.InvalidQuery(errs); err != nil {
		return err
	}
	runs, next, err := s.Store.Runs(r.Context(), f)
	if err != nil {
		return err
	}
	web.WritePage(w, runs, web.RunView, next)
	return nil
}

// runAction answers an admin's cancel or retry of one run (action):
// 200 with the run as it is afterwards; a finished run refuses a cancel,
// a run that did not fail a retry (409).
func (s *api) runAction(action string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, reason, err := s.adminWithReason(w, r)
		if err != nil {
			return err
		}
		run, err := s.ActOnRun(r.Context(), action, r.PathValue("runId"), p.User.Email, reason, s.apiAudit(r, "run."+action, map[string]any{}))
		if err != nil {
			return err
		}
		web.WriteJSON(w, http.StatusOK, web.RunView(run))
		return nil
	}
}

// adminWithReason admits an admin's request on a run and reads the
// reason its body gives (optional for a cancel or a retry, required for a
// delete, which the engine checks).
func (s *api) adminWithReason(w http.ResponseWriter, r *http.Request) (web.Principal, string, error) {
	p := web.PrincipalFrom(r.Context())
	if p.User.Role != domain.RoleAdmin {
		return web.Principal{}, "", web.ErrForbidden
	}
	var body struct {
		// Reason says why (at most 500 characters).
		Reason string `json:"reason"`
	}
	err := web.DecodeJSON(w, r, &body, s.MaxBody)
	return p, body.Reason, err
}

// rerunRun starts a new run of a run's workflow (its latest version) with
// the run's input, or the input the body gives (staff who may start the
// workflow): 201 with the new run, whose RUN_CREATED names the old one.
func (s *api) rerunRun(w http.ResponseWriter, r *http.Request) error {
	p := web.PrincipalFrom(r.Context())
	if !p.User.Role.Staff() {
		return domain.ErrNotFound
	}
	var body struct {
		// Input, when given, replaces the run's own.
		Input json.RawMessage `json:"input"`
	}
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	old, err := s.Store.Run(r.Context(), r.PathValue("runId"))
	if err != nil {
		return err
	}
	run, created, err := s.Engine.Rerun(r.Context(), domain.StarterOf(p.User), old, body.Input, r.Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	if !created {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", "/api/v1/runs/"+run.ID)
	web.WriteJSON(w, http.StatusCreated, web.RunView(run))
	return nil
}
