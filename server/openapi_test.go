package server

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The OpenAPI document and the mux agree: every documented operation is a
// route that the mux dispatches to its own pattern, and every route is
// documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                          `yaml:"openapi"`
		Paths   map[string]map[string]yaml.Node `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(OpenAPI(), &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."), "an OpenAPI 3 document")
	s := New(Options{Service: stubService{}})

	var documented []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "post", "delete", "put", "patch":
			default:
				continue // parameters, summary...
			}
			pattern := strings.ToUpper(method) + " " + path
			documented = append(documented, pattern)
			// A request for the documented path, with sample ids, reaches
			// exactly that pattern.
			concrete := strings.NewReplacer("{id}", "x-1.2.3").Replace(path)
			req := httptest.NewRequest(strings.ToUpper(method), concrete, nil)
			_, got := s.Mux().Handler(req)
			assert.Equal(t, pattern, got, "documented %s is served by the mux", pattern)
		}
	}
	require.NotEmpty(t, documented)
	for _, r := range s.Routes() {
		assert.Contains(t, documented, r, "route %s is documented in openapi.yaml", r)
	}
	slices.Sort(documented)
	routes := s.Routes()
	slices.Sort(routes)
	assert.Equal(t, routes, documented)
}
