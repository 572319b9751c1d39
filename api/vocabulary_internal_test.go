package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// apiWords are the values of the engine's scalar types that the API's
// wire types share (docs/architecture.md, Three contracts): each is part
// of the HTTP API's contract. A value changed, added or removed in
// orchestrator/record changes what clients read and must be a decision:
// update this list with the API's documentation.
var apiWords = map[string][]string{
	"Action": {"apply_baseline", "decommission_nodes", "deploy_nodes", "destroy_nodes", "power_cycle", "power_off", "power_on",
		"prepare_nodes", "prepare_site", "redeploy_nodes", "rescue_enter", "rescue_exit", "sync_images", "test_nodes",
		"validate_design", "verify_nodes", "verify_site"},
	"TaskStatus": {"cancelled", "failed", "partially_succeeded", "queued", "running", "succeeded"},
	"Stage": {"as-built", "baseline", "baselined", "bootstrap", "commission", "configure", "deleted", "deleting", "deploy", "deployed",
		"identify", "images", "oob-prepare", "pending", "power", "powered", "ready", "released", "releasing", "rescue",
		"rescue-exit", "rescue-mode", "tested", "testing", "verified", "verify"},
	"Outcome":      {"cancelled", "failed", "manual-intervention", "queued", "running", "succeeded"},
	"Lifecycle":    {"cancelled", "deleted", "deployed", "deploying", "failed", "new", "preparing", "ready", "released", "releasing"},
	"DriftKind":    {"bios", "firmware", "hostname", "kernel-options", "leak", "orphan", "owner", "power", "status", "switchport", "tags"},
	"Resolution":   {"accept", "release", "repair"},
	"Verb":         {"cancel", "rerun", "restart-clean", "resume", "retry"},
	"RecoveryStep": {"abort", "mark-broken", "mark-fixed", "release"},
}

// recordWords reads the constants of the apiWords types declared in
// orchestrator/record's source: type -> values. A constant whose value is
// not a string literal is resolved through known.
func recordWords(t *testing.T, known map[string]string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../orchestrator/record/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("orchestrator/record sources: %v (%d files)", err, len(files))
	}
	out := map[string][]string{}
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
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				constWords(t, g, known, out)
			}
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

func constWords(t *testing.T, g *ast.GenDecl, known map[string]string, out map[string][]string) {
	for _, s := range g.Specs {
		vs := s.(*ast.ValueSpec)
		typ, ok := vs.Type.(*ast.Ident)
		if !ok || apiWords[typ.Name] == nil {
			continue
		}
		for i, name := range vs.Names {
			v, ok := known[name.Name]
			if lit, isLit := vs.Values[i].(*ast.BasicLit); isLit && lit.Kind == token.STRING {
				v, _ = strconv.Unquote(lit.Value)
				ok = true
			}
			if !ok {
				t.Fatalf("record.%s: its value is no string literal; give it in known", name.Name)
			}
			out[typ.Name] = append(out[typ.Name], v)
		}
	}
}

// TestAPIWordsAreDecided: the values of the engine's scalar types the
// wire types share are the ones the API documents (apiWords), none added,
// changed or removed unnoticed; the lists the route table's enums come
// from hold all of them.
func TestAPIWordsAreDecided(t *testing.T) {
	known := map[string]string{"RecAbort": string(record.RecAbort), "RecMarkBroken": string(record.RecMarkBroken),
		"RecMarkFixed": string(record.RecMarkFixed)}
	got := recordWords(t, known)
	for _, typ := range slices.Sorted(maps.Keys(apiWords)) {
		if !slices.Equal(got[typ], apiWords[typ]) {
			t.Errorf("record.%s's values are %q, the API's are %q: decide whether the API changes, then update apiWords and the API's documentation", typ, got[typ], apiWords[typ])
		}
	}
	for typ, list := range map[string][]string{"Action": enum(record.Actions), "DriftKind": enum(record.DriftKinds),
		"Resolution": enum(record.Resolutions), "Verb": enum(taskVerbs)} {
		if l := slices.Sorted(slices.Values(list)); !slices.Equal(l, apiWords[typ]) {
			t.Errorf("the document's enum of %s lists %q, want %q", typ, l, apiWords[typ])
		}
	}
}
