package yaml

import (
	"os"
	"path/filepath"
	"testing"

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
