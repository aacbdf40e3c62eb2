package flow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// Definition is a registered document version as stored: its body in
// canonical form.
type Definition struct {
	WorkflowID string
	Version    string
	Body       []byte
	CreatedBy  string
	CreatedAt  time.Time
}

// Store keeps definitions; several servers sharing it see each other's.
type Store interface {
	// SaveDefinition stores d unless its (workflow, version) exists; then
	// it returns the stored one and created=false.
	SaveDefinition(ctx context.Context, d Definition) (stored Definition, created bool, err error)
	// Definition returns one version, or the latest registered when
	// version is empty; domain.ErrNotFound when there is none.
	Definition(ctx context.Context, workflowID, version string) (Definition, error)
	// Definitions lists every version.
	Definitions(ctx context.Context) ([]Definition, error)
	// ReplaceDefinition puts next in the place of old, with old's
	// registration time, if the stored version is still old (same body,
	// same registrant); false when it is not.
	ReplaceDefinition(ctx context.Context, old, next Definition) (bool, error)
}

// Catalog registers documents and resolves them into workflows for the
// engine. Versions are immutable, so a compiled version is cached for
// good; which version is the latest is asked of the store each time, since
// another server may have registered a newer one.
type Catalog struct {
	store Store
	env   Env
	code  *domain.Registry // workflows written in Go, whose ids documents may not take

	mu       sync.Mutex
	compiled map[string]*domain.Workflow // "id@version"

	// Schedules, when set, makes a workflow's schedules those its latest
	// registered document carries (see Document.Schedules).
	Schedules func(ctx context.Context, workflowID string, specs []domain.ScheduleSpec, by string) error
}

// NewCatalog returns a catalog on store that refuses the ids of code's
// workflows, and makes itself code's fallback for the workflows it holds.
func NewCatalog(store Store, env Env, code *domain.Registry) *Catalog {
	c := &Catalog{store: store, env: env, code: code, compiled: map[string]*domain.Workflow{}}
	code.SetFallback(c.resolve)
	return c
}

// Registered is the outcome of registering a document.
type Registered struct {
	Document   Document
	Definition Definition
	// Created is false when the same version with the same body was
	// already registered.
	Created bool
}

// Register validates body and stores it as a new version. The same
// version again with the same document is not an error (Created is
// false); with another document it is a *domain.ConflictError.
func (c *Catalog) Register(ctx context.Context, body []byte, by string) (Registered, error) {
	doc, wf, canonical, err := c.prepare(body)
	if err != nil {
		return Registered{}, err
	}
	if _, ok := c.code.Latest(doc.ID); ok {
		return Registered{}, &domain.ConflictError{Code: domain.CodeConflict, Message: fmt.Sprintf("workflow %s is defined in the server's code; a document cannot take its id", doc.ID)}
	}
	stored, created, err := c.store.SaveDefinition(ctx, Definition{WorkflowID: doc.ID, Version: doc.Version, Body: canonical, CreatedBy: by, CreatedAt: c.env.now()})
	if err != nil {
		return Registered{}, err
	}
	if !created && !bytes.Equal(stored.Body, canonical) {
		return Registered{}, &domain.ConflictError{Code: domain.CodeVersionExists, Message: fmt.Sprintf("workflow %s version %s is already registered with a different document; versions are immutable: register a new version", doc.ID, doc.Version)}
	}
	c.keep(doc.ID+"@"+doc.Version, wf)
	if err := c.schedules(ctx, doc, by); err != nil {
		return Registered{}, err
	}
	return Registered{Document: doc, Definition: stored, Created: created}, nil
}

// schedules hands the schedules of doc to Schedules when doc is its
// workflow's latest version: registering an older version again leaves
// the newer one's schedules as they are.
func (c *Catalog) schedules(ctx context.Context, doc Document, by string) error {
	if c.Schedules == nil {
		return nil
	}
	latest, err := c.store.Definition(ctx, doc.ID, "")
	if err != nil || latest.Version != doc.Version {
		return err
	}
	if err := c.Schedules(ctx, doc.ID, doc.ScheduleSpecs(), by); err != nil {
		return fmt.Errorf("workflow %s version %s is registered, but its schedules are not: %w", doc.ID, doc.Version, err)
	}
	return nil
}

// Supersede puts body in the place of the document stored under its id
// and version when that document is exactly one of former, registered by
// by, and runs the same steps as body; it reports whether it did. It is
// for the examples a server ships: an older build registered its own
// text of an example, no operator chose that text, and posting this
// build's text must not meet a 409. The steps must match so that a run
// already on the version, which keeps running it, does nothing different;
// what may differ is how the document describes itself (its id or name,
// description, input schema).
func (c *Catalog) Supersede(ctx context.Context, body []byte, former [][]byte, by string) (bool, error) {
	doc, wf, canonical, err := c.prepare(body)
	if err != nil {
		return false, err
	}
	stored, err := c.store.Definition(ctx, doc.ID, doc.Version)
	if err != nil || stored.CreatedBy != by || !isFormer(stored.Body, former) {
		return false, err
	}
	old, _, err := Load(stored.Body, c.env)
	if err != nil {
		return false, nil // it no longer compiles here: not a version runs can be on
	}
	same, err := sameSteps(old, doc)
	if err != nil || !same {
		return false, err
	}
	next := Definition{WorkflowID: doc.ID, Version: doc.Version, Body: canonical, CreatedBy: by, CreatedAt: stored.CreatedAt}
	replaced, err := c.store.ReplaceDefinition(ctx, stored, next)
	if err != nil || !replaced {
		return false, err
	}
	c.replace(doc.ID+"@"+doc.Version, wf)
	return true, nil
}

// prepare compiles body and puts it in the canonical form it is stored in.
func (c *Catalog) prepare(body []byte) (Document, *domain.Workflow, []byte, error) {
	doc, wf, err := Load(body, c.env)
	if err != nil {
		return Document{}, nil, nil, err
	}
	canonical, err := Canonical(body)
	if err != nil {
		return Document{}, nil, nil, err
	}
	return doc, wf, canonical, nil
}

// isFormer reports whether stored, a canonical body, is one of former.
func isFormer(stored []byte, former [][]byte) bool {
	for _, f := range former {
		if canonical, err := Canonical(f); err == nil && bytes.Equal(canonical, stored) {
			return true
		}
	}
	return false
}

// sameSteps reports whether two documents' steps are the same, field for
// field.
func sameSteps(a, b Document) (bool, error) {
	ja, err := json.Marshal(a.Steps)
	if err != nil {
		return false, err
	}
	jb, err := json.Marshal(b.Steps)
	if err != nil {
		return false, err
	}
	ca, err := Canonical(ja)
	if err != nil {
		return false, err
	}
	cb, err := Canonical(jb)
	return err == nil && bytes.Equal(ca, cb), err
}

// LoadDir registers every *.json document in dir, as LoadFS does, each
// by "file:" and its name.
func (c *Catalog) LoadDir(ctx context.Context, dir string) ([]Registered, error) {
	return c.LoadFS(ctx, os.DirFS(dir), func(name string) string { return "file:" + name })
}

// LoadFS registers every *.json document at the top of fsys, in name
// order, each by by(its name), and reports all that fail at once (with
// their names).
func (c *Catalog) LoadFS(ctx context.Context, fsys fs.FS, by func(name string) string) ([]Registered, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	var out []Registered
	var errs []error
	for _, name := range names {
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r, err := c.Register(ctx, body, by(name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// List returns every registered version, by workflow and in registration
// order.
func (c *Catalog) List(ctx context.Context) ([]Definition, error) { return c.store.Definitions(ctx) }

// resolve finds a document workflow for the engine: one version, or the
// latest when version is empty. A document that no longer compiles here
// (its task handler is gone from this build) is reported, not run.
func (c *Catalog) resolve(ctx context.Context, id, version string) (*domain.Workflow, error) {
	if version != "" {
		if wf, ok := c.cached(id + "@" + version); ok {
			return wf, nil
		}
	}
	d, err := c.store.Definition(ctx, id, version)
	if err != nil {
		return nil, err
	}
	key := d.WorkflowID + "@" + d.Version
	if wf, ok := c.cached(key); ok {
		return wf, nil
	}
	_, wf, err := Load(d.Body, c.env)
	if err != nil {
		return nil, fmt.Errorf("workflow %s version %s cannot run on this server (%v): %w", d.WorkflowID, d.Version, err, domain.ErrNotFound)
	}
	return c.keep(key, wf), nil
}

func (c *Catalog) cached(key string) (*domain.Workflow, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wf, ok := c.compiled[key]
	return wf, ok
}

// keep caches wf under key unless another compilation of the same version
// got there first, and returns the cached one: every run of a version
// shares one workflow.
func (c *Catalog) keep(key string, wf *domain.Workflow) *domain.Workflow {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.compiled[key]; ok {
		return cached
	}
	c.compiled[key] = wf
	return wf
}

// replace caches wf under key in the place of any earlier compilation:
// the stored document changed (see Supersede), so the cached one is stale.
func (c *Catalog) replace(key string, wf *domain.Workflow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.compiled[key] = wf
}

// Canonical re-encodes a JSON document with sorted keys, no insignificant
// space and numbers as written, so that equal documents compare equal.
func Canonical(body []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return encodeCanonical(v)
}

// encodeCanonical writes v, decoded from JSON, in canonical form.
func encodeCanonical(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
