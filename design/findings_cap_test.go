package design_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// TestFindingsCapped: a design with more problems than MaxFindings gets
// that many and one saying how many more there were, instead of one per
// problem (an 8 MiB file of unknown keys made 800,000 findings, 760 MB
// and a 197 MB answer).
func TestFindingsCapped(t *testing.T) {
	var b strings.Builder
	for d := 0; d < 3; d++ {
		fmt.Fprintf(&b, "---\napiVersion: slipway/v1\nkind: Network\nmetadata: {name: n%d}\nspec:\n  cidr: 10.0.%d.0/24\n", d, d)
		for i := 0; i < 5000; i++ {
			fmt.Fprintf(&b, "  k%d: 1\n", i)
		}
	}
	srcs, fs := yamlingest.ParseFile("unknown.yaml", []byte(b.String()), 0)
	if len(fs) != 0 {
		t.Fatal(fs)
	}
	_, fs = design.Build(srcs)
	if len(fs) != design.MaxFindings+1 {
		t.Fatalf("%d findings, want %d and one more", len(fs), design.MaxFindings)
	}
	if !strings.Contains(fs[0].Message, "more findings are not shown") {
		t.Errorf("first finding: %s", fs[0])
	}
}
