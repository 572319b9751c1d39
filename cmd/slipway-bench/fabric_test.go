package main

import (
	"encoding/json"
	"testing"

	"github.com/slipway-dev/slipway/sim/ovs/ovstest"
)

// TestBenchFabric: a small bench-fabric run configures every port of
// its nodes in both phases through the ovs driver, as ovs-vsctl reads
// them back (each bond's two members and each PXE port in production,
// every port in the quarantine VLAN after), and reports a floor; bounds
// on its settings are usage errors. In CI a missing Open vSwitch fails
// (ovstest.Require).
func TestBenchFabric(t *testing.T) {
	ovstest.Require(t)
	code, out, errs := bench(t, "bench-fabric", "--nodes", "6", "--switches", "2", "--workers", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r FabricResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Ports != 18 || len(r.Phases) != 2 {
		t.Fatalf("result %+v", r)
	}
	for _, p := range r.Phases {
		if p.Verified != 18 {
			t.Errorf("%s: ovs-vsctl reads %d of 18 ports as the phase wants", p.Phase, p.Verified)
		}
		if p.WallSeconds <= 0 || p.FloorSeconds <= 0 || p.MsPerPort <= 0 {
			t.Errorf("%s: figures %+v", p.Phase, p)
		}
	}
	for _, bad := range [][]string{{"--nodes", "0"}, {"--nodes", "10001"}, {"--switches", "65"}, {"--workers", "0"}} {
		if code, _, _ := bench(t, append([]string{"bench-fabric"}, bad...)...); code != exitUsage {
			t.Errorf("bench-fabric %v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}
