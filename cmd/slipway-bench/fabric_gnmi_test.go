package main

import (
	"encoding/json"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// TestBenchFabricGNMI: a small bench-fabric --driver gnmi run configures
// every port of its nodes in each phase as the lab target's own state
// holds them, the repeat of production makes the target accept no Set
// (and production and quarantine one per node: its ports share a
// switch), and it reports a floor for each phase; a switch over the
// target's port bound and an unknown driver are usage errors.
func TestBenchFabricGNMI(t *testing.T) {
	code, out, errs := bench(t, "bench-fabric", "--driver", "gnmi", "--nodes", "6", "--switches", "2", "--workers", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r FabricResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Driver != "gnmi" || r.Ports != 18 || len(r.Phases) != 3 {
		t.Fatalf("result %+v", r)
	}
	wantSets := map[string]int{"production": 6, phaseAgain: 0, "quarantine": 6}
	for _, p := range r.Phases {
		if p.Verified != 18 {
			t.Errorf("%s: the target holds %d of 18 ports as the phase wants", p.Phase, p.Verified)
		}
		if want, ok := wantSets[p.Phase]; !ok || p.Sets == nil || *p.Sets != want {
			got := -1
			if p.Sets != nil {
				got = *p.Sets
			}
			t.Errorf("%s: the target accepted %d Sets, want %d", p.Phase, got, want)
		}
		if p.WallSeconds <= 0 || p.FloorSeconds <= 0 || p.MsPerPort <= 0 {
			t.Errorf("%s: figures %+v", p.Phase, p)
		}
	}
	for _, bad := range [][]string{{"--driver", "eos"}, {"--driver", "gnmi", "--nodes", "10000", "--switches", "25"}} {
		if code, _, _ := bench(t, append([]string{"bench-fabric"}, bad...)...); code != exitUsage {
			t.Errorf("bench-fabric %v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}

// TestVerifyGNMIPortsFresh: the check counts no port of a fresh target
// (access VLAN 1, no LAG) as production or quarantine wants it, and
// every port once the floor's Set carried a phase's settings.
func TestVerifyGNMIPortsFresh(t *testing.T) {
	nodes := benchNodes(4, 2)
	tg, err := gnmiBenchTarget(nodes, 2, "u", "p-bench")
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	for _, ph := range []drivers.Phase{drivers.PhaseProduction, drivers.PhaseQuarantine} {
		if n, err := verifyGNMIPorts(tg, nodes, ph); err != nil || n != 0 {
			t.Errorf("fresh target, %s: %d ports verified (%v), want 0", ph, n, err)
		}
	}
}
