package api_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/asyncapi"
)

// snakeName is the API's one JSON naming convention (issue #18), as MAAS's
// own API spells its fields: lower-case words joined by underscores.
var snakeName = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// badNames lists the property names of every schema in a document
// (decoded JSON: OpenAPI or AsyncAPI) that break the convention, each with
// where it was found. Object keys under "properties" are property names;
// everything else is walked for nested schemas.
func badNames(doc any, at string) []string {
	var out []string
	switch v := doc.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok {
			for name := range props {
				if !snakeName.MatchString(name) {
					out = append(out, at+".properties."+name)
				}
			}
		}
		for k, e := range v {
			out = append(out, badNames(e, at+"."+k)...)
		}
	case []any:
		for _, e := range v {
			out = append(out, badNames(e, at+"[]")...)
		}
	}
	slices.Sort(out)
	return out
}

// schemaName is the design schema's convention (docs/site-schema.md):
// lower camelCase.
var schemaName = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// reachedSchemas adds name and every component schema its schema refers
// to, at any depth, to out.
func reachedSchemas(schemas map[string]any, name string, out map[string]bool) {
	if out[name] {
		return
	}
	out[name] = true
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				reachedSchemas(schemas, strings.TrimPrefix(ref, "#/components/schemas/"), out)
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(schemas[name])
}

func decoded(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestJSONNamesAreSnakeCase: every property of every schema the control
// API's OpenAPI document holds (the request and answer bodies of every
// route) and every property of the event stream's AsyncAPI payloads is
// snake_case, but a design object's (the schemas a resolved node reaches),
// which are the design schema's camelCase names.
func TestJSONNamesAreSnakeCase(t *testing.T) {
	t.Parallel()
	doc, err := api.Document()
	if err != nil {
		t.Fatal(err)
	}
	tree := decoded(t, doc)
	// A design object (a resolved node) speaks the design schema's names,
	// in camelCase as the site files do (docs/api.md); the envelope
	// around it and every other body, snake_case.
	schemas := tree.(map[string]any)["components"].(map[string]any)["schemas"].(map[string]any)
	designs := map[string]bool{}
	reachedSchemas(schemas, "RenderedNode", designs)
	if len(designs) < 10 {
		t.Fatalf("the design object's schemas: %d reached from RenderedNode", len(designs))
	}
	var bad []string
	for _, name := range badNames(tree, "openapi") {
		s, _, _ := strings.Cut(strings.TrimPrefix(name, "openapi.components.schemas."), ".")
		if !designs[s] || !schemaName.MatchString(name[strings.LastIndex(name, ".")+1:]) {
			bad = append(bad, name)
		}
	}
	if len(bad) > 0 {
		t.Errorf("OpenAPI properties neither snake_case nor, in a design object, the design schema's camelCase (fix the json tags):\n%s", strings.Join(bad, "\n"))
	}
	if n := strings.Count(string(must(json.Marshal(tree))), `"properties"`); n < 20 {
		t.Fatalf("the OpenAPI document has %d schemas with properties: the walk found no bodies", n)
	}
	events, err := asyncapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	if bad := badNames(decoded(t, events), "asyncapi"); len(bad) > 0 {
		t.Errorf("AsyncAPI properties not snake_case:\n%s", strings.Join(bad, "\n"))
	}
}

// TestBadNamesFindsCamelCase: the check fails on the names the API spelled
// before, wherever they sit in a schema.
func TestBadNamesFindsCamelCase(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		schema *openapi3.Schema
		want   []string
	}{
		{"snake", openapi3.NewObjectSchema().WithProperty("machine_id", openapi3.NewStringSchema()).
			WithProperty("ipv4_cidr", openapi3.NewStringSchema()), nil},
		{"camel", openapi3.NewObjectSchema().WithProperty("machineId", openapi3.NewStringSchema()),
			[]string{"doc.properties.machineId"}},
		{"pascal", openapi3.NewObjectSchema().WithProperty("ID", openapi3.NewStringSchema()),
			[]string{"doc.properties.ID"}},
		{"nested in a list", openapi3.NewObjectSchema().WithProperty("items", openapi3.NewArraySchema().
			WithItems(openapi3.NewObjectSchema().WithProperty("designRevision", openapi3.NewStringSchema()))),
			[]string{"doc.properties.items.items.properties.designRevision"}},
		{"trailing underscore", openapi3.NewObjectSchema().WithProperty("node_", openapi3.NewStringSchema()),
			[]string{"doc.properties.node_"}},
	} {
		if got := badNames(decoded(t, c.schema), "doc"); !slices.Equal(got, c.want) {
			t.Errorf("%s: badNames = %q, want %q", c.name, got, c.want)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
