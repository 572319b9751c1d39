package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

const module = "github.com/slipway-dev/slipway/"

// notOnTheWire are the packages whose structs an API wire type must not
// hold, at any depth: the engine's stored records, the design schema, the
// driver SDK, the site registry's and the onboardings' records. Each has
// its own contract (the store's format, the design files, the plugin
// protocol); the API's wire types are its own and converted at its edge.
var notOnTheWire = []string{module + "orchestrator/record", module + "design", module + "drivers", module + "siteregistry",
	module + "onboarding"}

// wireExtra are the exported wire types no route's body names (the
// client's, the event stream's); every other exported struct of
// api/apitypes is reached from the route table.
var wireExtra = []reflect.Type{
	reflect.TypeFor[apitypes.Event](),       // the event stream's data (GET /events/stream)
	reflect.TypeFor[apitypes.RoCEFinding](), // a refused RoCE upsert's problem details (findings)
}

// wireRoots are the route table's request and response types and
// wireExtra.
func wireRoots() []reflect.Type {
	roots := slices.Clone(wireExtra)
	for _, r := range (&Server{}).table() {
		for _, v := range []any{r.Request, r.Response} {
			if v != nil {
				roots = append(roots, reflect.TypeOf(v))
			}
		}
	}
	return roots
}

// foreignStructs walks t (fields, embedded structs, pointers, slices,
// arrays, maps' keys and values) and reports each struct of a package in
// pkgs it reaches, with the path that reached it; seen holds the types
// walked, for every type reached.
func foreignStructs(t reflect.Type, path string, pkgs []string, seen map[reflect.Type]bool, out map[string]string) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		foreignStructs(t.Elem(), path+"[]", pkgs, seen, out)
		return
	case reflect.Map:
		foreignStructs(t.Key(), path+"{key}", pkgs, seen, out)
		foreignStructs(t.Elem(), path+"{}", pkgs, seen, out)
		return
	case reflect.Struct:
	default:
		return
	}
	if slices.Contains(pkgs, t.PkgPath()) {
		if _, ok := out[t.String()]; !ok {
			out[t.String()] = path
		}
	}
	if seen[t] {
		return
	}
	seen[t] = true
	for f := range t.Fields() {
		foreignStructs(f.Type, path+"."+f.Name, pkgs, seen, out)
	}
}

// declaredStructs are the exported struct types declared in api/apitypes
// (its source), generic ones left out (their instances are walked).
func declaredStructs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("apitypes/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("api/apitypes sources: %v (%d files)", err, len(files))
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() && ts.TypeParams == nil {
					names = append(names, ts.Name.Name)
				}
			}
		}
	}
	return names
}

// TestWireTypesAreTheAPIs: no body a route reads or answers, and no
// exported type of api/apitypes, holds a struct of the engine's records,
// the design, the driver SDK or the site registry, at any depth.
func TestWireTypesAreTheAPIs(t *testing.T) {
	seen := map[reflect.Type]bool{}
	found := map[string]string{}
	for _, r := range wireRoots() {
		foreignStructs(r, r.String(), notOnTheWire, seen, found)
	}
	for _, typ := range slices.Sorted(maps.Keys(found)) {
		t.Errorf("the API's wire types hold %s (at %s): give the API its own type in api/apitypes and convert at the API's edge", typ, found[typ])
	}
	reached := map[string]bool{}
	for typ := range seen {
		if typ.PkgPath() == module+"api/apitypes" {
			reached[typ.Name()] = true
		}
	}
	for _, name := range declaredStructs(t) {
		if !reached[name] {
			t.Errorf("apitypes.%s is reached from no route's body: name it in wireExtra (api/wiretypes_internal_test.go) so that it is checked too", name)
		}
	}
}

// TestForeignStructsFinds: the walk finds a struct of a listed package
// behind a pointer, a slice, a map and an embedding, and names the path.
func TestForeignStructsFinds(t *testing.T) {
	type inner struct{ X int }
	type embeds struct{ inner }
	type holder struct {
		P *[]map[string]embeds
		Q int
	}
	found := map[string]string{}
	foreignStructs(reflect.TypeFor[holder](), "holder", []string{module + "api"}, map[reflect.Type]bool{}, found)
	want := map[string]string{"api.holder": "holder", "api.embeds": "holder.P[][]{}", "api.inner": "holder.P[][]{}.inner"}
	if !reflect.DeepEqual(found, want) {
		t.Errorf("found %v, want %v", found, want)
	}
}
