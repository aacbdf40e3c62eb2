package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// tracing exports OpenTelemetry traces over OTLP/HTTP when the standard
// variables name a collector (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and OTEL_SDK_DISABLED is not true:
// a span per HTTP request, per step a worker runs and per transition the
// engine commits, each of a run's in the run's trace (see
// tollgate.Config.TracerProvider). The service is OTEL_SERVICE_NAME
// (tollgate by default), with OTEL_RESOURCE_ATTRIBUTES; the exporter
// reads its headers, timeout and the rest from its OTEL_EXPORTER_OTLP_*
// variables, and the provider its sampler from OTEL_TRACES_SAMPLER.
// Without a collector nothing is traced and nothing is added to a
// request's path.
type tracing struct {
	provider *sdktrace.TracerProvider
}

// newTracing starts the exporter, or returns nil when tracing is off.
func newTracing(ctx context.Context, getenv func(string) string, version string) (*tracing, error) {
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); endpoint == "" && base != "" {
		endpoint = strings.TrimRight(base, "/") + "/v1/traces"
	}
	if endpoint == "" || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(cmp.Or(getenv("OTEL_SERVICE_NAME"), "tollgate")), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return &tracing{provider: tp}, nil
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

// shutdown flushes the spans not yet exported.
func (t *tracing) shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
