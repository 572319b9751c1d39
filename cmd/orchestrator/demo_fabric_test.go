package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/slipway-dev/slipway/labrun/demo"
	"github.com/slipway-dev/slipway/sim/ovs/ovstest"
)

// TestDemoExampleJSON: `demo -o json` on the example prints the
// deployment's JSON summary (no narrative) carrying the connectivity its
// switch fabric measured in Open vSwitch: the three networks the nodes
// address, every ping as the design says, the cross-VLAN probes
// isolated, the destroyed node's ports in quarantine. In CI a missing
// Open vSwitch fails (ovstest.Require).
func TestDemoExampleJSON(t *testing.T) {
	t.Parallel()
	ovstest.Require(t)
	code, out, errs := cli(t, "demo", "--site", exampleSite, "-o", "json", "--state", filepath.Join(t.TempDir(), "state.db"))
	if code != 0 {
		t.Fatalf("demo -o json: exit %d\n%s%s", code, out, errs)
	}
	var r demo.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON summary (%v): %s", err, out)
	}
	if r.Nodes != 8 || r.Deployed != 8 || r.Fabric == nil {
		t.Fatalf("summary: %d nodes, %d deployed, fabric %v", r.Nodes, r.Deployed, r.Fabric)
	}
	f := r.Fabric
	if len(f.Networks) != 3 || f.Pings != 3*8*7+48 || f.Unexpected != 0 || !f.Pass {
		t.Errorf("fabric: %d networks, %d pings, %d unexpected, pass %v", len(f.Networks), f.Pings, f.Unexpected, f.Pass)
	}
	for _, p := range f.CrossVLAN {
		if p.Measured {
			t.Errorf("cross-VLAN probe reached: %+v", p)
		}
	}
	if len(f.Quarantine) != 3 {
		t.Errorf("quarantine: %+v", f.Quarantine)
	}
	// The GPU nodes' custom image, by the lab's count: every machine on
	// its design's image, the region holding gpu-golden complete.
	const sha = "daf26e2ff9e81e4fd39ff7668a0cfadd7339c5ab4c345019bce81580af67d155"
	im := r.Images
	if im == nil || im.Matched != 8 || im.Custom != 3 || len(im.Wrong) != 0 || len(im.Regions) != 1 || len(im.Syncs) != 1 {
		t.Fatalf("images: %+v", im)
	}
	if up := im.Regions[0].Uploaded; len(up) != 1 || up[0].Name != "gpu-golden" || !up[0].Complete || up[0].SHA256 != sha || up[0].Held != 12<<20 ||
		im.Regions[0].Stats.Chunks != 3 || im.Syncs[0].State != "synced" || im.Syncs[0].Seconds <= 0 {
		t.Errorf("region %+v, sync %+v", im.Regions[0], im.Syncs[0])
	}
}
