package web

import (
	"net/http"
	"strings"

	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// A request is named by the route that served it in logs, metrics and
// spans, never by its path or query: capability tokens travel in paths
// (decision links, password-reset links, async steps' receipts) and in
// queries (resume URLs).

// routeOf is the pattern that routed r ("GET /links/{token}"), or
// "unmatched".
func routeOf(r *http.Request) string {
	if r.Pattern == "" {
		return "unmatched"
	}
	return r.Pattern
}

// nameSpan names r's tracing span, if any, by method and route pattern,
// and gives it the pattern as http.route and url.path, over any path an
// instrumentation recorded when the route was not yet known.
func nameSpan(r *http.Request) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	if r.Pattern == "" {
		span.SetAttributes(semconv.URLPath("unmatched"))
		return
	}
	path := r.Pattern
	if _, p, ok := strings.Cut(path, " "); ok {
		path = p
	}
	span.SetName(r.Method + " " + path)
	span.SetAttributes(semconv.HTTPRoute(path), semconv.URLPath(path))
}
