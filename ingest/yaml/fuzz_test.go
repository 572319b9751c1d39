package yaml

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yamlv3 "gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/design"
)

func addExampleSeeds(f *testing.F) {
	files, _ := filepath.Glob("../../examples/site-yaml/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("x: {<<: [*y]}\n"))
	f.Add([]byte("apiVersion: slipway/v1\nkind: HostProfile\nmetadata: {name: a}\nspec: {parent: a, tags: [!x, \"!*\"]}\n"))
	// A hardware profile's baseline (firmware, raid, virtual media) and a
	// Site's baseline policy.
	f.Add([]byte("apiVersion: slipway/v1\nkind: HardwareProfile\nmetadata: {name: b}\nspec:\n  oob: {type: redfish}\n" +
		"  deviceAliases: {g0: {bus: pci, address: \"0000:18:00.0\"}, d0: {bus: bay, address: \"0\"}, d1: {bus: bay, address: \"1\"}}\n" +
		"  firmware:\n    - {component: gpu, devices: [g0], version: \"1.0\", image: {url: \"https://fw.example/g.bin\", sha256: " + strings.Repeat("ab", 32) + "}}\n" +
		"    - {component: bios, version: \"2\", image: {file: ../b.bin, sha256: x}}\n" +
		"  raid: {volumes: [{name: os, level: raid1, drives: [d0, d1, d0], boot: true, size: 1g}]}\n" +
		"  virtualMedia: {iso: \"http://u:p@boot.example/b.iso\"}\n---\n" +
		"apiVersion: slipway/v1\nkind: Site\nmetadata: {name: s}\nspec: {lifecycle: {baseline: {reboots: allow, maxParallel: 0}}}\n"))
	// Image documents (a custom one, a standard one, a bad one) and a
	// host profile and a hardware profile that select and constrain them.
	f.Add([]byte("apiVersion: slipway/v1\nkind: Image\nmetadata: {name: gpu-golden}\nspec:\n  architecture: arm64/generic\n" +
		"  custom: {source: {file: gpu-golden.ddraw, sha256: " + strings.Repeat("cd", 32) + "}, format: ddraw, size: 8_388_608, baseImage: ubuntu/jammy, title: GPU}\n---\n" +
		"apiVersion: slipway/v1\nkind: Image\nmetadata: {name: noble}\nspec: {os: ubuntu, release: noble}\n---\n" +
		"apiVersion: slipway/v1\nkind: Image\nmetadata: {name: bad}\nspec: {os: custom, custom: {source: {url: \"http://u:p@x/\"}, format: qcow2, size: -1, baseImage: x}}\n---\n" +
		"apiVersion: slipway/v1\nkind: HardwareProfile\nmetadata: {name: arm}\nspec: {architecture: arm64}\n---\n" +
		"apiVersion: slipway/v1\nkind: HostProfile\nmetadata: {name: gpu}\nspec: {hardwareProfile: arm, platform: {image: gpu-golden}}\n"))
}

// FuzzParseFile: no input makes the parser panic or hang.
func FuzzParseFile(f *testing.F) {
	addExampleSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		srcs, _ := ParseFile("fuzz.yaml", data, 0)
		for _, s := range srcs {
			if s.Doc == nil {
				t.Fatal("nil document")
			}
		}
	})
}

// FuzzIngestResolve: parse, then layer, resolve, decode and validate,
// with the input both alone and layered over the example site.
func FuzzIngestResolve(f *testing.F) {
	addExampleSeeds(f)
	var base []design.Source
	files, _ := filepath.Glob("../../examples/site-yaml/*.yaml")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		s, _ := ParseFile(p, b, 0)
		base = append(base, s...)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		srcs, _ := ParseFile("fuzz.yaml", data, 1)
		design.Build(srcs)
		d, fs := design.Build(append(append([]design.Source(nil), base...), srcs...))
		if d == nil {
			t.Fatal("nil design")
		}
		if !fs.HasErrors() {
			if _, _, err := d.Canonical(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// estimate is the value estimate of data (the least limit overBudget
// lets pass).
func estimate(data []byte) int {
	lo, hi := 0, 2*len(data)+2
	for lo < hi {
		if m := (lo + hi) / 2; line(overBudget(data, m, math.MaxInt)) == 0 {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

func line(l int, _ bool) int { return l }

func nodes(n *yamlv3.Node) int {
	c := 1
	for _, k := range n.Content {
		c += nodes(k)
	}
	return c
}

// FuzzValueEstimate: for any input yaml.v3 reads, the nodes it builds are
// at most twice the estimate plus two per document (budget.go's claim,
// which makes the estimate a bound on the tree).
func FuzzValueEstimate(f *testing.F) {
	addExampleSeeds(f)
	for _, s := range []string{"{a, b, c}\n", "- \n- \n-\n", "? \n? \n", "[: , : ]\n", "a:\nb:\n", `{"a":"","b":[]}`, "- - - -\n", "*a\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := yamlv3.NewDecoder(bytes.NewReader(data))
		total, docs := 0, 0
		for {
			var doc yamlv3.Node
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return // only what yaml.v3 reads whole is bounded here
			}
			total += nodes(&doc)
			docs++
		}
		if est := estimate(data); total > 2*est+2*docs {
			t.Fatalf("%d nodes in %d documents for an estimate of %d", total, docs, est)
		}
	})
}
