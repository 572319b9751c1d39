package demo

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// build loads and builds the design of roots.
func build(t *testing.T, roots ...string) (*design.Design, design.Findings) {
	t.Helper()
	res, err := yamlingest.Load(context.Background(), roots)
	if err != nil {
		t.Fatal(err)
	}
	return design.Build(res.Sources)
}

// TestWriteMistakes: the layer over the example site makes it invalid
// with its two mistakes only, every error found in the layer's file: the
// second node given the first one's BMC address (two rules report it) and
// the CIDR with host bits.
func TestWriteMistakes(t *testing.T) {
	site := filepath.Join("..", "..", "examples", "site-yaml")
	d, fs := build(t, site)
	if fs.HasErrors() {
		t.Fatalf("the example site is invalid: %v", fs)
	}
	dir := t.TempDir()
	if err := WriteMistakes(dir, d); err != nil {
		t.Fatal(err)
	}
	_, fs = build(t, site, dir)
	var errs []string
	for _, f := range fs {
		if f.Severity == design.SeverityError {
			errs = append(errs, f.String())
		}
	}
	for _, e := range errs {
		if !strings.Contains(e, "mistakes.yaml:") {
			t.Errorf("an error outside the layer: %s", e)
		}
	}
	all := strings.Join(errs, "\n")
	for _, want := range []string{"Node/" + d.NodeNames()[1] + ": BMC address " + d.Nodes[d.NodeNames()[0]].Spec.OOB.Address, "has host bits set"} {
		if !strings.Contains(all, want) {
			t.Errorf("the errors do not name %q:\n%s", want, all)
		}
	}
	if err := WriteMistakes(t.TempDir(), &design.Design{}); err == nil {
		t.Error("an empty design: no error, want one (two nodes and a network needed)")
	}
}
