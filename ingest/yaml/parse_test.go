package yaml

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slipway-dev/slipway/design"
)

func TestParseFilePositions(t *testing.T) {
	src := `# comment
apiVersion: slipway/v1
kind: Network
metadata: {name: mgmt}
spec:
  cidr: 10.0.0.0/24
---
---
apiVersion: slipway/v1
kind: Network
metadata:
  name: storage
spec:
  cidr: 10.1.0.0/24
  vlan: 30
`
	srcs, fs := ParseFile("net.yaml", []byte(src), 2)
	if len(fs) != 0 {
		t.Fatalf("findings: %v", fs)
	}
	if len(srcs) != 2 {
		t.Fatalf("got %d documents, want 2 (the empty one is skipped)", len(srcs))
	}
	got := []design.Pos{srcs[0].Pos, srcs[1].Pos,
		srcs[0].Doc.Get("spec").Get("cidr").Pos, srcs[1].Doc.Get("spec").Get("vlan").Pos}
	want := []design.Pos{{File: "net.yaml", Line: 2}, {File: "net.yaml", Line: 9},
		{File: "net.yaml", Line: 6}, {File: "net.yaml", Line: 15}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("positions (-want +got):\n%s", d)
	}
	if srcs[1].Root != 2 {
		t.Errorf("root = %d, want 2", srcs[1].Root)
	}
	if v := srcs[1].Doc.Get("spec").Get("vlan"); v.Tag != design.TagInt || v.Str != "30" {
		t.Errorf("vlan = %s %q, want !!int 30", v.Tag, v.Str)
	}
}

func TestParseFileFindings(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line      int
		msg       string
	}{
		{"unclosed flow list", "kind: Network\nspec:\n  cidr: [10.0.0.0/24\n", 3, "malformed YAML: did not find expected ',' or ']'"},
		{"parser error after line 1", "- a\nb: c\n", 2, "malformed YAML: did not find expected '-' indicator"},
		{"missing key", "kind: Network\nspec:\n  a: b\n c\n", 4, "malformed YAML"},
		{"scanner error", "kind: Network\nspec: x\n  y: z\n", 3, "mapping values are not allowed"},
		{"duplicate key", "kind: Network\nspec:\n  cidr: a\n  cidr: b\n", 4, `key "cidr" appears twice`},
		{"complex key", "? [a, b]\n: c\n", 1, "mapping keys must be plain strings"},
		{"unknown tag", "kind: !weird x\n", 1, "unsupported YAML tag !weird"},
		{"bad merge", "a: &x 1\nb:\n  <<: *x\n", 3, "merge key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, fs := ParseFile("f.yaml", []byte(tc.src), 0)
			if len(fs) != 1 {
				t.Fatalf("got %d findings %v, want 1", len(fs), fs)
			}
			f := fs[0]
			if f.Rule != design.RuleSchema || f.Severity != design.SeverityError || f.File != "f.yaml" || f.Line != tc.line || !strings.Contains(f.Message, tc.msg) {
				t.Errorf("got %+v, want schema error at f.yaml:%d containing %q", f, tc.line, tc.msg)
			}
		})
	}
}

func TestParseFileAliasesAndRemovals(t *testing.T) {
	src := `defaults: &d {mtu: 9000, vlan: 5}
a:
  <<: *d
  vlan: 7
b: *d
tags:
  - x
  - !y
  - "!z"
  - !*
`
	srcs, fs := ParseFile("f.yaml", []byte(src), 0)
	if len(fs) != 0 || len(srcs) != 1 {
		t.Fatalf("findings %v, %d docs", fs, len(srcs))
	}
	doc := srcs[0].Doc
	if got := doc.Get("a").Text("mtu") + "/" + doc.Get("a").Text("vlan"); got != "9000/7" {
		t.Errorf("merge key: a = %s, want 9000/7 (explicit keys win)", got)
	}
	if doc.Get("b") != doc.Get("defaults") {
		t.Errorf("an alias shares its anchor's value")
	}
	var tags []string
	for _, it := range doc.Get("tags").Items {
		tags = append(tags, it.Str)
	}
	if d := cmp.Diff([]string{"x", "!y", "!z", "!*"}, tags); d != "" {
		t.Errorf("tags (-want +got):\n%s", d)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.yaml", "kind: B\n")
	write("a.yml", "kind: A\n---\nkind: A2\n")
	write("sub/c.yaml", "kind: C\n")
	write(".git/x.yaml", "kind: Hidden\n")
	write("notes.txt", "kind: Text\n")
	write("other/d.yaml", "kind: D\n")
	res, err := Load(t.Context(), []string{dir, filepath.Join(dir, "other", "d.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var roots []int
	for _, s := range res.Sources {
		kinds = append(kinds, s.Doc.Text("kind"))
		roots = append(roots, s.Root)
	}
	if d := cmp.Diff([]string{"A", "A2", "B", "D", "C", "D"}, kinds); d != "" {
		t.Errorf("document order (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{0, 0, 0, 0, 0, 1}, roots); d != "" {
		t.Errorf("roots (-want +got):\n%s", d)
	}

	if _, err := Load(t.Context(), []string{filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing root: err = %v, want one naming the root", err)
	}
	empty := t.TempDir()
	if _, err := Load(t.Context(), []string{empty}); err == nil || !strings.Contains(err.Error(), "no .yaml") {
		t.Errorf("empty root: err = %v", err)
	}
}

func TestLoadExampleSiteIsClean(t *testing.T) {
	res, err := Load(t.Context(), []string{"../../examples/site-yaml"})
	if err != nil {
		t.Fatal(err)
	}
	_, fs := design.Build(res.Sources)
	fs = append(fs, res.Findings...)
	if len(fs) != 0 {
		for _, f := range fs {
			t.Error(f)
		}
	}
}
