package design_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// declaredRules are the rule IDs the design package declares: the values
// of its constants named Rule* (in its non-test files), sorted.
func declaredRules(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				ids = append(ids, ruleValues(t, vs)...)
			}
			return true
		})
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// ruleValues are the string values of the constants named Rule* in vs.
func ruleValues(t *testing.T, vs *ast.ValueSpec) []string {
	var ids []string
	for i, name := range vs.Names {
		if !strings.HasPrefix(name.Name, "Rule") || i >= len(vs.Values) {
			continue
		}
		if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			id, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", name.Name, err)
			}
			ids = append(ids, id)
		}
	}
	return ids
}

// documentedRules are the rule IDs of docs/site-schema.md's rules table
// (its section "### The rules"), sorted.
func documentedRules(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../docs/site-schema.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n### The rules\n")
	if !ok {
		t.Fatal(`docs/site-schema.md has no section "### The rules"`)
	}
	if end := strings.Index(section, "\n#"); end >= 0 {
		section = section[:end]
	}
	var ids []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|").FindAllStringSubmatch(section, -1) {
		ids = append(ids, m[1])
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// TestRuleIDs: the rules the design package declares (TestRules requires
// a failing and a passing case of each) are the site schema's table.
func TestRuleIDs(t *testing.T) {
	declared := declaredRules(t)
	if len(declared) < 20 {
		t.Fatalf("found %d Rule constants in the design package: %v", len(declared), declared)
	}
	if diff := cmp.Diff(declared, documentedRules(t)); diff != "" {
		t.Errorf("rule IDs declared (-) vs documented in docs/site-schema.md (+):\n%s", diff)
	}
	t.Logf("%d rules", len(declared))
}
