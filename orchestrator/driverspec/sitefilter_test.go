package driverspec

import (
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// A node filter's sites select the nodes of those Sites: in a design
// with two (spec.site set), in one with a single Site (no node names it),
// and in a design read back from its stored revision.
func TestFilterBySite(t *testing.T) {
	east := record.Filter{Sets: []design.NodeFilter{{Sites: []string{"lab-east"}}}}
	d := designtest.TwoSites(t)
	want := []string{"r02-cmp01", "r02-cmp02", "r02-gpu01", "r02-gpu02"}
	if got, err := east.Select(d); err != nil || !slices.Equal(got, want) {
		t.Fatalf("lab-east of the two-site design: %v %v", got, err)
	}
	raw, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	back, err := design.DecodeRevision(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := east.Select(back); !slices.Equal(got, want) {
		t.Fatalf("lab-east of the stored revision: %v", got)
	}
	one := designtest.Example(t)
	lab := record.Filter{Sets: []design.NodeFilter{{Sites: []string{"lab"}}}}
	if got, _ := lab.Select(one); len(got) != len(one.Nodes) {
		t.Fatalf("the only Site selects %d of %d nodes", len(got), len(one.Nodes))
	}
	if got, _ := east.Select(one); len(got) != 0 {
		t.Fatalf("a Site the design lacks selects %v", got)
	}
}
