package web_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain/hook"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
	"github.com/tollgatehq/tollgate/web/api"
)

type openAPIDoc struct {
	OpenAPI string `json:"openapi"`
	Paths   map[string]map[string]struct {
		OperationID string `json:"operationId"`
		Parameters  []struct {
			Name string `json:"name"`
			In   string `json:"in"`
		} `json:"parameters"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

// The OpenAPI document and the router describe the same server: every
// route is in the document with the query parameters it reads, and every
// operation of the document is a route. A route added, removed or given
// another parameter on one side only fails here.
func TestOpenAPIMatchesTheRouter(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) {
		withUI(s)
		s.Hooks = &hook.Hooks{} // every optional route registered
	})
	served := e.call(t, "GET", "/api/v1/openapi.json", "", "")
	want(t, served, http.StatusOK)
	if string(served.Body) != string(api.OpenAPI()) {
		t.Fatal("/api/v1/openapi.json is not the document")
	}
	var doc openAPIDoc
	if err := json.Unmarshal(served.Body, &doc); err != nil || doc.OpenAPI != "3.1.0" || len(doc.Paths) == 0 {
		t.Fatalf("the document: %v (openapi %q, %d paths)", err, doc.OpenAPI, len(doc.Paths))
	}
	anyMethod := []string{"get", "post", "put", "patch", "delete"}
	routes := e.api.Routes()
	routes = slices.DeleteFunc(routes, func(r web.Route) bool { return r.Page })
	for _, r := range routes {
		item, ok := doc.Paths[r.Path]
		if !ok {
			t.Errorf("route %s %s is not in the document", r.Method, r.Path)
			continue
		}
		methods := []string{strings.ToLower(r.Method)}
		if r.Method == "" {
			methods = anyMethod
		}
		for _, m := range methods {
			op, ok := item[m]
			if !ok {
				t.Errorf("route %s %s: the document has no %s", r.Method, r.Path, m)
				continue
			}
			var query []string
			for _, p := range op.Parameters {
				if p.In == "query" {
					query = append(query, p.Name)
				}
			}
			if strings.HasPrefix(r.Path, "/api/v1/") && r.Path != "/api/v1/openapi.json" &&
				!slices.Equal(slices.Sorted(slices.Values(query)), slices.Sorted(slices.Values(r.Query))) {
				t.Errorf("%s %s reads query parameters %v; the document says %v", r.Method, r.Path, r.Query, query)
			}
		}
	}
	for path, item := range doc.Paths {
		for m := range item {
			if !slices.ContainsFunc(routes, func(r web.Route) bool {
				return r.Path == path && (strings.EqualFold(r.Method, m) || r.Method == "")
			}) {
				t.Errorf("the document's %s %s is no route", strings.ToUpper(m), path)
			}
		}
	}
	// Every reference names a component.
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				name, isSchema := strings.CutPrefix(r, "#/components/schemas/")
				if _, found := doc.Components.Schemas[name]; isSchema && !found {
					t.Errorf("$ref %s names no schema", r)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var tree any
	_ = json.Unmarshal(served.Body, &tree)
	walk(tree)
}
