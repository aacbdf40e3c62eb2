package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// tracing exports OpenTelemetry traces over OTLP/HTTP when the standard
// variables name a collector (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; the exporter reads the rest of its
// configuration, headers and all, from them too): a span per HTTP request,
// per step a worker runs and per transition the engine commits, with the
// run and workflow. Without them nothing is traced and nothing is added
// to a request's path.
type tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// newTracing starts the exporter, or returns nil when tracing is off.
func newTracing(ctx context.Context, getenv func(string) string, version string) (*tracing, error) {
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); endpoint == "" && base != "" {
		endpoint = strings.TrimRight(base, "/") + "/v1/traces"
	}
	if endpoint == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(semconv.ServiceName("tollgate"), semconv.ServiceVersion(version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return &tracing{provider: tp, tracer: tp.Tracer("github.com/tollgatehq/tollgate")}, nil
}

// handler wraps h with a span per request, named by method until the web
// server renames it to its route and gives it the route's pattern as
// url.path and http.route. A request's path and query carry capability
// tokens (decision and password-reset links, receipts, resume URLs), so
// otelhttp is handed a copy of the request without them and h gets the
// request itself: no token reaches a span's name or attributes. otelhttp
// records no header but User-Agent and X-Forwarded-For, so Authorization,
// API keys and cookies stay out of spans too.
func (t *tracing) handler(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	traced := otelhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, seen *http.Request) {
		r := seen.Context().Value(requestKey{}).(*http.Request).WithContext(seen.Context())
		r.Body = seen.Body // otelhttp's, which counts the bytes read
		h.ServeHTTP(w, r)
	}), "tollgate", otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := r.WithContext(context.WithValue(r.Context(), requestKey{}, r))
		seen.URL, seen.RequestURI = &url.URL{}, ""
		traced.ServeHTTP(w, seen)
	})
}

// requestKey carries the request otelhttp is not shown (see handler).
type requestKey struct{}

// span is the engine's Trace option: a span with the attributes given,
// marked as an error when the work failed.
func (t *tracing) span(ctx context.Context, name string, attrs map[string]string) (context.Context, func(error)) {
	kv := make([]attribute.KeyValue, 0, len(attrs))
	for k, v := range attrs {
		kv = append(kv, attribute.String(k, v))
	}
	ctx, s := t.tracer.Start(ctx, name, trace.WithAttributes(kv...))
	return ctx, func(err error) {
		if err != nil {
			s.RecordError(err)
			s.SetStatus(codes.Error, err.Error())
		}
		s.End()
	}
}

// shutdown flushes the spans not yet exported.
func (t *tracing) shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
