// Package designtest loads the project's example site design for tests, from
// any package directory.
package designtest

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// ExampleDir is the path of examples/site-yaml.
func ExampleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "site-yaml")
}

// Example returns the example site, resolved; it fails the test if the
// example has any error.
func Example(tb testing.TB) *design.Design {
	tb.Helper()
	return load(tb, ExampleDir())
}

// TwoSites returns the example with examples/two-sites layered over it:
// the Sites lab (rack r01) and lab-east (rack r02).
func TwoSites(tb testing.TB) *design.Design {
	tb.Helper()
	return load(tb, ExampleDir(), filepath.Join(filepath.Dir(ExampleDir()), "two-sites"))
}

func load(tb testing.TB, roots ...string) *design.Design {
	tb.Helper()
	res, err := yamlingest.Load(context.Background(), roots)
	if err != nil {
		tb.Fatal(err)
	}
	d, fs := design.Build(res.Sources)
	if fs.HasErrors() {
		tb.Fatal(fs)
	}
	return d
}
