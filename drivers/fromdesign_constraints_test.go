package drivers_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/testsite"
)

// A node's constraints reach the driver with the memory in MiB, rounded
// up; a node without them has none.
func TestFromDesignConstraints(t *testing.T) {
	d := testsite.Example(t)
	n := *d.Nodes["r01-cmp01"]
	if got := drivers.NodeFromDesign(d, &n, "").Constraints; got != nil {
		t.Fatalf("constraints of a node without them: %+v", got)
	}
	n.Spec.Constraints = &design.Constraints{Zone: "z1", Pool: "gpu", Tags: []string{"gpu-h100x8"}, MinCPU: 64, MinMemory: "1000m"}
	got := drivers.NodeFromDesign(d, &n, "").Constraints
	want := &drivers.Constraints{Zone: "z1", Pool: "gpu", Tags: []string{"gpu-h100x8"}, MinCPU: 64, MinMemoryMiB: 954}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("constraints (-want +got):\n%s", diff)
	}
}
