package web_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web/api"
	"github.com/tollgatehq/tollgate/web/ui"
)

// A program that embeds the handler and traces it with stock otelhttp,
// which records the path asked for, still exports no token: the server
// names each span by its route and replaces url.path with the route's
// pattern, or with "unmatched".
func TestSpansCarryTheRouteNotThePath(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, nil)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	srv := httptest.NewServer(otelhttp.NewHandler(e.api.Handler(api.Routes, ui.Routes), "embedder", otelhttp.WithTracerProvider(tp)))
	t.Cleanup(srv.Close)
	for _, c := range []struct{ method, path, name, urlPath string }{
		{"POST", "/webhook/flow/step/receipt-secret-0123", "POST /webhook/{flowId}/{stepId}/{token}", "/webhook/{flowId}/{stepId}/{token}"},
		{"PUT", "/v1/flow-runs/run-1/waitpoints/wp-1?token=resume-secret-4567", "PUT /v1/flow-runs/{runId}/waitpoints/{waitpointId}", "/v1/flow-runs/{runId}/waitpoints/{waitpointId}"},
		{"GET", "/webhook/flow/step/receipt-secret-0123", "GET", "unmatched"}, // 405: no route
	} {
		req, err := http.NewRequest(c.method, srv.URL+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := spans.GetSpans()
		if len(got) == 0 {
			t.Fatalf("%s %s: no span", c.method, c.path)
		}
		sp := got[len(got)-1]
		if sp.Name != c.name {
			t.Errorf("%s %s: span named %q, want %q", c.method, c.path, sp.Name, c.name)
		}
		for _, a := range sp.Attributes {
			if v := a.Value.String(); strings.Contains(v, "secret") {
				t.Errorf("%s %s: span %q carries %s=%q", c.method, c.path, sp.Name, a.Key, v)
			}
			if a.Key == "url.path" && a.Value.AsString() != c.urlPath {
				t.Errorf("%s %s: url.path %q, want %q", c.method, c.path, a.Value.AsString(), c.urlPath)
			}
		}
	}
}
