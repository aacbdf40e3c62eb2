package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tollgatehq/tollgate/domain"
)

// CodeInvalidQuery means a query parameter is longer, or the query has
// more parameters, than any list or page takes (HTTP 400). The problem's
// errors name the parameter.
const CodeInvalidQuery = "invalid_query"

// Bounds of the query string of every API route and page, checked before
// the handler reads it: filters, searches, ids and cursors are short, and
// an unbounded search reaches SQL (SQLite refuses LIKE patterns past
// 50,000 bytes, and every database pays for long ones). A post-login
// redirect (next) carries a whole page address with its own query.
const maxQueryValues = 50

var queryLimits = map[string]int{"next": 2000}

// checkQuery is the one check of r's query: at most maxQueryValues values,
// each at most domain.MaxQueryParamLen characters (queryLimits for a few
// names), with names no longer. Its *domain.ValidationError names the
// first parameter over its bound.
func checkQuery(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q := r.URL.Query()
	n := 0
	for name, values := range q {
		n += len(values)
		limit, ok := queryLimits[name]
		if !ok {
			limit = domain.MaxQueryParamLen
		}
		if len(name) > domain.MaxQueryParamLen {
			return queryError("", fmt.Sprintf("parameter names have at most %d characters", domain.MaxQueryParamLen))
		}
		for _, v := range values {
			if utf8.RuneCountInString(v) > limit {
				return queryError(name, fmt.Sprintf("must have at most %d characters", limit))
			}
		}
	}
	if n > maxQueryValues {
		return queryError("", fmt.Sprintf("a query has at most %d parameters", maxQueryValues))
	}
	return nil
}

func queryError(name, message string) *domain.ValidationError {
	detail := "The query parameter " + name + " is too long: it " + message + "."
	if name == "" {
		detail = "The query is too large: " + message + "."
	}
	return &domain.ValidationError{Code: CodeInvalidQuery, Message: detail, Fields: []domain.FieldError{domain.QueryError(name, message)}}
}

// boundQuery refuses a request whose query breaks checkQuery's bounds
// before h reads it.
func boundQuery(h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := checkQuery(r); err != nil {
			return err
		}
		return h(w, r)
	}
}

// knownQuery refuses, before h reads it, a request whose query names a
// parameter its route does not take (params): a misspelt filter would
// otherwise be ignored, and the list answered unfiltered. Bodies are
// strict the same way.
func knownQuery(params []string, h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if r.URL.RawQuery == "" {
			return h(w, r)
		}
		var unknown []string
		for name := range r.URL.Query() {
			if !slices.Contains(params, name) {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) == 0 {
			return h(w, r)
		}
		slices.Sort(unknown)
		takes := "It takes no query parameters."
		if len(params) > 0 {
			takes = "It takes " + strings.Join(params, ", ") + "."
		}
		ve := &domain.ValidationError{Code: CodeInvalidQuery, Message: "Unknown query parameter " + strings.Join(unknown, ", ") + ". " + takes}
		for _, name := range unknown {
			ve.Fields = append(ve.Fields, domain.QueryError(name, "this address takes no such parameter"))
		}
		return ve
	}
}

// boundPageQuery is boundQuery for pages: a readable 400 page.
func (s *Server) boundPageQuery(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkQuery(r); err != nil {
			s.RenderError(w, r, http.StatusBadRequest, "That address is too long",
				err.(*domain.ValidationError).Message+" Shorten the search or filter and try again.", s.ViewerOf(r))
			return
		}
		h(w, r)
	}
}

// TimeQuery reads query parameter name, when given, as a date and time
// with a zone (RFC 3339) into at, and adds to errs when it is not one.
func TimeQuery(q url.Values, errs []domain.FieldError, name string, at *time.Time) []domain.FieldError {
	v := strings.TrimSpace(q.Get(name))
	if v == "" {
		return errs
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return append(errs, domain.QueryError(name, "must be a date and time with a zone, like 2026-04-15T09:00:00Z"))
	}
	*at = t
	return errs
}
