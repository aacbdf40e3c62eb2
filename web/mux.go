package web

import (
	"net/http"
	"slices"
	"strings"

	"github.com/tollgatehq/tollgate/static"
)

// A Room registers one part of the web app's routes on the server's mux:
// the JSON API (web/api) or the pages (web/ui). Handler takes them.
type Room func(s *Server, m *Mux)

// Mux is what the server and its rooms register routes on. Each kind of
// route gets its middleware here, and every route but the fallbacks is
// kept for Routes.
type Mux struct {
	s   *Server
	mux *http.ServeMux
	// cop refuses cross-origin form posts to pages (Go's
	// CrossOriginProtection: Sec-Fetch-Site, else Origin against Host);
	// reads pass.
	cop *http.CrossOriginProtection
}

func (s *Server) newMux() *Mux {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.RenderError(w, r, http.StatusForbidden, "Request refused", "This form was sent from another site, so it was not accepted. Open Tollgate and try again from there.", nil)
	}))
	return &Mux{s: s, mux: http.NewServeMux(), cop: cop}
}

// Handle registers a route that is neither an API route nor a page
// (resume URLs, webhooks, health): h sees the request as it came. query
// names the query parameters it reads, for Routes.
func (m *Mux) Handle(pattern string, h http.Handler, query ...string) {
	m.mux.Handle(pattern, h)
	m.s.routes = append(m.s.routes, newRoute(pattern, query))
}

// API registers a route of the JSON API: it takes an API key, reads the
// query parameters named in query and refuses others, and its error
// becomes problem details.
func (m *Mux) API(pattern string, h HandlerFunc, query ...string) {
	m.Handle(pattern, m.s.requireKey(m.s.Handle(boundQuery(knownQuery(query, h)))), query...)
}

// Page registers a page of the web app: its form posts must come from the
// app itself, and an over-long query is refused with a readable page.
func (m *Mux) Page(pattern string, h http.HandlerFunc) {
	m.mux.Handle(pattern, UIHeaders(m.cop.Handler(m.s.boundPageQuery(h))))
	r := newRoute(pattern, nil)
	r.Page = true
	m.s.routes = append(m.s.routes, r)
}

// Fallback registers h for what no other route of pattern's tree takes
// (a 404 or 405 in the room's own words); Routes leaves it out.
func (m *Mux) Fallback(pattern string, h http.Handler) { m.mux.Handle(pattern, h) }

// Allowed lists the methods, in a fixed order, that the mux routes r's
// path to a handler other than the fallback pattern: those a 405 names in
// its Allow header. None means the path does not exist.
func (m *Mux) Allowed(r *http.Request, fallback string) []string {
	var out []string
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = method
		if _, pattern := m.mux.Handler(probe); pattern != "" && pattern != fallback {
			out = append(out, method)
		}
	}
	return out
}

// staticFiles serves the pages' stylesheets, scripts and images.
func (m *Mux) staticFiles() {
	m.mux.Handle("GET /static/", http.StripPrefix("/static/", staticHeaders(http.FileServerFS(static.FS))))
}

// HandlerFunc is a handler whose error the server turns into problem
// details (see Handle).
type HandlerFunc func(http.ResponseWriter, *http.Request) error

// Route is one route of the server: Method is empty for a route that
// takes any method (resume URLs and webhook triggers, whose callers choose
// it), Query lists the query parameters an API route reads (it refuses
// others), and Page marks the web app's pages, which the OpenAPI document
// leaves out.
type Route struct {
	Method, Path string
	Query        []string
	Page         bool
}

func newRoute(pattern string, params []string) Route {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "", pattern
	}
	return Route{Method: method, Path: path, Query: slices.Clone(params)}
}

// Routes lists the routes the last Handler registered, pages included.
func (s *Server) Routes() []Route { return slices.Clone(s.routes) }
