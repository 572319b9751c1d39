package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// module is the module's path; every package of Slipway starts with it.
const module = "github.com/slipway-dev/slipway"

// docPath is the document holding the package map, from the module's root.
const docPath = "docs/architecture.md"

// maxDoc bounds the document read.
const maxDoc = 1 << 20

// pkg is what the check needs of `go list -json`: the package (relative
// to the module) and the packages its non-test files import.
type pkg struct {
	ImportPath string
	Name       string
	Imports    []string
}

// rel is p relative to the module ("" is the module's root package).
func rel(p string) string {
	return strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
}

// own tells whether import path p is a package of this module.
func own(p string) bool { return p == module || strings.HasPrefix(p, module+"/") }

func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH to list the packages: %v", err)
	}
	return p
}

// moduleRoot is the directory of go.mod, as the go command finds it.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(goTool(t), "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 || string(bytes.TrimSpace(out)) == os.DevNull {
		t.Fatalf("go env GOMOD: %v (%q): run the test inside the module", err, out)
	}
	return filepath.Dir(string(bytes.TrimSpace(out)))
}

// listPackages is `go list -json ./...` at the module's root: every
// package of the module with its direct imports. Test files are left
// out: a test may assemble what it tests with a higher layer (a lab).
func listPackages(t *testing.T, root string) []pkg {
	t.Helper()
	cmd := exec.Command(goTool(t), "list", "-json=ImportPath,Name,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json ./... in %s: %v\n%s", root, err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list's output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list -json ./... in %s listed no package", root)
	}
	return pkgs
}

// packageMap is what the document says: the layers bottom to top and the
// layer of each package.
type packageMap struct {
	layers  []string       // bottom first
	rank    map[string]int // layer -> its index in layers
	layerOf map[string]string
	rows    map[string]int // package -> the line of its row
}

var (
	ticked   = regexp.MustCompile("`([^`]+)`")
	layerRow = regexp.MustCompile("^\\|\\s*(\\d+)\\s*\\|\\s*`([a-z]+)`\\s*\\|")
)

// parseMap reads the "## Layers" table (| n | `name` | ..., n from 1 at
// the bottom) and the "## Packages" table (| `pkg`, `pkg` | `layer` |
// what they own |) of a document.
func parseMap(r io.Reader) (packageMap, []string) {
	m := packageMap{rank: map[string]int{}, layerOf: map[string]string{}, rows: map[string]int{}}
	var problems []string
	var section string
	type row struct {
		line        int
		pkgs, layer string
	}
	var rows []row
	sc := bufio.NewScanner(io.LimitReader(r, maxDoc))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "## ") {
			section = strings.TrimSpace(line[3:])
			continue
		}
		if section == "Layers" {
			if g := layerRow.FindStringSubmatch(line); g != nil {
				if k, _ := strconv.Atoi(g[1]); k != len(m.layers)+1 {
					problems = append(problems, fmt.Sprintf("%s:%d: layer %s is numbered %d, want %d (bottom first, from 1)", docPath, n, g[2], k, len(m.layers)+1))
				}
				m.rank[g[2]] = len(m.layers)
				m.layers = append(m.layers, g[2])
			}
		}
		if cells := strings.Split(strings.Trim(line, "|"), "|"); section == "Packages" && strings.HasPrefix(line, "|") && len(cells) >= 3 && strings.Contains(cells[0], "`") {
			rows = append(rows, row{n, cells[0], cells[1]})
		}
	}
	if err := sc.Err(); err != nil {
		return m, append(problems, fmt.Sprintf("reading %s: %v", docPath, err))
	}
	if len(m.layers) == 0 || len(rows) == 0 {
		return m, append(problems, fmt.Sprintf("%s has no layer table under \"## Layers\" or no package table under \"## Packages\"", docPath))
	}
	for _, r := range rows {
		problems = append(problems, m.addRow(r.line, r.pkgs, r.layer)...)
	}
	return m, problems
}

// addRow records a row of the package table: its packages and their layer.
func (m packageMap) addRow(line int, pkgCell, layerCell string) []string {
	var problems []string
	layer := strings.Trim(strings.TrimSpace(layerCell), "`")
	if _, ok := m.rank[layer]; !ok {
		problems = append(problems, fmt.Sprintf("%s:%d: layer %q is not one of the layers %v", docPath, line, layer, m.layers))
	}
	for _, g := range ticked.FindAllStringSubmatch(pkgCell, -1) {
		if prev, dup := m.rows[g[1]]; dup {
			problems = append(problems, fmt.Sprintf("%s:%d: package %s has a row already (line %d)", docPath, line, g[1], prev))
		}
		m.rows[g[1]], m.layerOf[g[1]] = line, layer
	}
	return problems
}

// readMap parses the module's document, failing the test on a malformed
// map.
func readMap(t *testing.T, root string) packageMap {
	t.Helper()
	f, err := os.Open(filepath.Join(root, docPath))
	if err != nil {
		t.Fatalf("the package map: %v", err)
	}
	defer f.Close()
	m, problems := parseMap(f)
	for _, p := range problems {
		t.Error(p)
	}
	if t.Failed() {
		t.FailNow()
	}
	return m
}

// internalUpward lists the imports of a package under internal/ of a
// Slipway package outside internal/.
func internalUpward(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		if !strings.HasPrefix(rel(p.ImportPath), "internal/") {
			continue
		}
		for _, imp := range p.Imports {
			if own(imp) && !strings.HasPrefix(rel(imp), "internal/") {
				out = append(out, fmt.Sprintf("%s imports %s: internal/ holds leaf utilities only; move %s next to what it serves (%s, Layers)",
					rel(p.ImportPath), rel(imp), rel(p.ImportPath), docPath))
			}
		}
	}
	return out
}

// upward lists the packages without a layer and the imports of a package
// of a higher layer.
func upward(pkgs []pkg, m packageMap) []string {
	var out []string
	for _, p := range pkgs {
		from := rel(p.ImportPath)
		lf, ok := m.layerOf[from]
		if !ok {
			out = append(out, fmt.Sprintf("%s has no layer: add its row to the package map of %s", from, docPath))
			continue
		}
		for _, imp := range p.Imports {
			if lt, ok := m.layerOf[rel(imp)]; own(imp) && ok && m.rank[lt] > m.rank[lf] {
				out = append(out, fmt.Sprintf("%s (layer %s) imports %s (layer %s, above it): move the code to the layer it belongs to, or let the lower package declare an interface the higher one satisfies",
					from, lf, rel(imp), lt))
			}
		}
	}
	return out
}

// mismatches lists the packages missing from the map and the rows
// naming no package.
func mismatches(pkgs []pkg, m packageMap) []string {
	var out []string
	listed := map[string]bool{}
	for _, p := range pkgs {
		listed[rel(p.ImportPath)] = true
		if _, ok := m.rows[rel(p.ImportPath)]; !ok {
			out = append(out, fmt.Sprintf("package %s is missing from the package map of %s: add its row (package, layer, what it owns)", rel(p.ImportPath), docPath))
		}
	}
	for p, line := range m.rows {
		if !listed[p] {
			out = append(out, fmt.Sprintf("%s:%d names %s, which go list ./... does not find: remove the row or fix its path", docPath, line, p))
		}
	}
	return out
}

// misnamed lists the packages whose name is not their folder's (commands,
// package main, excepted).
func misnamed(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		if folder := p.ImportPath[strings.LastIndexByte(p.ImportPath, '/')+1:]; p.Name != "main" && p.Name != folder {
			out = append(out, fmt.Sprintf("package %s is named %s: name it %s, after its folder, or move it to a folder of its name", rel(p.ImportPath), p.Name, folder))
		}
	}
	return out
}

func report(t *testing.T, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
}

// TestInternalImportsNothingAbove: a package under internal/ is a leaf
// utility; it imports nothing of Slipway outside internal/. What wires or
// serves a higher package lives next to it.
func TestInternalImportsNothingAbove(t *testing.T) {
	report(t, internalUpward(listPackages(t, moduleRoot(t))))
}

// TestNoUpwardImport: every package has a layer in the package map, and
// no package imports one of a higher layer. With -v it logs the graph by
// layer: how many imports go from each layer to each.
func TestNoUpwardImport(t *testing.T) {
	root := moduleRoot(t)
	pkgs, m := listPackages(t, root), readMap(t, root)
	report(t, upward(pkgs, m))
	for _, line := range layerGraph(pkgs, m) {
		t.Log(line)
	}
}

// layerGraph counts the imports from each layer to each, top layer first.
func layerGraph(pkgs []pkg, m packageMap) []string {
	n := map[[2]string]int{}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			from, to := m.layerOf[rel(p.ImportPath)], m.layerOf[rel(imp)]
			if own(imp) && from != "" && to != "" {
				n[[2]string{from, to}]++
			}
		}
	}
	var out []string
	for i := len(m.layers) - 1; i >= 0; i-- {
		var parts []string
		for j := i; j >= 0; j-- {
			if k := n[[2]string{m.layers[i], m.layers[j]}]; k > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", m.layers[j], k))
			}
		}
		if len(parts) == 0 {
			parts = []string{"nothing of Slipway"}
		}
		out = append(out, fmt.Sprintf("%s imports: %s", m.layers[i], strings.Join(parts, ", ")))
	}
	return out
}

// TestPackageMapMatchesGoList: the package map of docs/architecture.md
// names every package go list finds, and no package it does not.
func TestPackageMapMatchesGoList(t *testing.T) {
	root := moduleRoot(t)
	report(t, mismatches(listPackages(t, root), readMap(t, root)))
}

// TestPackageNamesMatchFolders: a package is named after its folder, so
// an import path says what its code calls it.
func TestPackageNamesMatchFolders(t *testing.T) {
	report(t, misnamed(listPackages(t, moduleRoot(t))))
}
