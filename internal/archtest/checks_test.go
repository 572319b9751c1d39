package archtest

import (
	"slices"
	"strings"
	"testing"
)

// sampleDoc is a package map of three layers over a made-up tree.
const sampleDoc = "# A\n\n## Layers\n\n| layer | name | holds |\n|---|---|---|\n" +
	"| 1 | `leaf` | internal/ |\n| 2 | `model` | x |\n| 3 | `engine` | y |\n\n" +
	"## Packages\n\n| package | layer | owns |\n|---|---|---|\n" +
	"| `internal/a`, `internal/b` | `leaf` | utilities |\n| `design` | `model` | the model |\n" +
	"| `orchestrator` | engine | the engine |\n| `gone` | `model` | a row of no package |\n\n## Next\n\n| `notapackage` | x | y |\n"

func samplePkgs() []pkg {
	m := func(s ...string) []string {
		for i := range s {
			s[i] = module + "/" + s[i]
		}
		return s
	}
	return []pkg{
		{ImportPath: module + "/internal/a", Imports: []string{"fmt"}},
		{ImportPath: module + "/internal/b", Imports: m("internal/a", "design")},
		{ImportPath: module + "/design", Imports: m("internal/a", "orchestrator")},
		{ImportPath: module + "/orchestrator", Imports: m("design", "internal/b")},
		{ImportPath: module + "/unmapped", Imports: m("design")},
		{ImportPath: module + "/api/types", Name: "apitypes"},
		{ImportPath: module + "/cmd/tool", Name: "main"},
	}
}

// TestChecksFindViolations: each check names what a made-up tree does
// wrong, and nothing else: an internal package importing design, the
// model importing the engine, packages without a row, a row without a
// package, a package not named after its folder.
func TestChecksFindViolations(t *testing.T) {
	m, problems := parseMap(strings.NewReader(sampleDoc))
	if len(problems) != 0 {
		t.Fatalf("parsing the sample map: %q", problems)
	}
	if !slices.Equal(m.layers, []string{"leaf", "model", "engine"}) || m.layerOf["internal/b"] != "leaf" || m.layerOf["orchestrator"] != "engine" {
		t.Fatalf("sample map parsed as layers %v, packages %v", m.layers, m.layerOf)
	}
	if _, ok := m.rows["notapackage"]; ok {
		t.Errorf("a table after the Packages section was read as the map")
	}
	pkgs := samplePkgs()
	want := map[string][]string{
		"internal": {"internal/b imports design"},
		"upward":   {"internal/b (layer leaf) imports design (layer model", "design (layer model) imports orchestrator (layer engine", "unmapped has no layer", "api/types has no layer", "cmd/tool has no layer"},
		"map":      {"package unmapped is missing", "package api/types is missing", "package cmd/tool is missing", "names gone, which go list"},
		"names":    {"package api/types is named apitypes: name it types"},
	}
	for i := range pkgs {
		if pkgs[i].Name == "" {
			pkgs[i].Name = pkgs[i].ImportPath[strings.LastIndexByte(pkgs[i].ImportPath, '/')+1:]
		}
	}
	got := map[string][]string{"internal": internalUpward(pkgs), "upward": upward(pkgs, m), "map": mismatches(pkgs, m), "names": misnamed(pkgs)}
	for check, wants := range want {
		if len(got[check]) != len(wants) {
			t.Errorf("%s check: %d problems, want %d: %q", check, len(got[check]), len(wants), got[check])
			continue
		}
		for i, w := range wants {
			if !strings.Contains(got[check][i], w) {
				t.Errorf("%s check: problem %d is %q, want it to say %q", check, i, got[check][i], w)
			}
		}
	}
}

// TestParseMapRefusesBadRows: a layer the Layers table does not define, a
// package in two rows and layers out of order are reported.
func TestParseMapRefusesBadRows(t *testing.T) {
	doc := "## Layers\n| 1 | `leaf` | a |\n| 3 | `top` | b |\n## Packages\n| `a` | `leaf` | x |\n| `a` | `leaf` | y |\n| `b` | `middle` | z |\n"
	_, problems := parseMap(strings.NewReader(doc))
	wants := []string{"layer top is numbered 3, want 2", "package a has a row already", `layer "middle" is not one of the layers`}
	if len(problems) != len(wants) {
		t.Fatalf("%d problems, want %d: %q", len(problems), len(wants), problems)
	}
	for i, w := range wants {
		if !strings.Contains(problems[i], w) {
			t.Errorf("problem %d is %q, want it to say %q", i, problems[i], w)
		}
	}
}
