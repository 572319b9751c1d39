package maas

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/gensite"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/sim/lab"
)

// genDesign is a generated site (internal/gensite, the layout of the
// scale benchmarks) of n nodes.
func genDesign(t *testing.T, n int) *design.Design {
	t.Helper()
	dir := t.TempDir()
	if _, err := gensite.Write(dir, gensite.Options{Nodes: n}); err != nil {
		t.Fatal(err)
	}
	res, err := yamlingest.Load(t.Context(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	d, fs := design.Build(res.Sources)
	if fs.HasErrors() {
		t.Fatal(fs)
	}
	return d
}

// kinds is the lab's request counts by kind ("GET /machines/{machine}/").
func kinds(l *lab.Lab) map[string]int {
	out := map[string]int{}
	for _, r := range l.MAAS.Stats().Snapshot().Requests {
		out[r.Request] = r.Count
	}
	return out
}

// delta is after minus before, by kind, leaving out kinds that did not move.
func delta(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range after {
		if d := n - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// nodePhases runs one generated node through the driver calls the engine
// makes for a deploy (identify, commission, inventory, the configure
// stage's status read, networking, storage, platform, deploy) and answers
// the lab's requests of each phase by kind.
func nodePhases(t *testing.T) (map[string]map[string]int, *lab.Lab, *Driver, drivers.Node) {
	t.Helper()
	d := genDesign(t, 1)
	l, drv := cfgLab(t, d)
	cfgSubnets(t, drv, driverspec.Site(d))
	var name string
	for k := range d.Nodes {
		name = k
	}
	n := driverspec.Node(d, d.Nodes[name], "")
	pxeBoot(l.Machine(name))
	out := map[string]map[string]int{}
	phase := func(what string, fn func()) {
		before := kinds(l)
		fn()
		out[what] = delta(kinds(l), before)
	}
	phase("identify", func() { n.MachineID = identify(t, drv, n).MachineID })
	phase("commission", func() {
		mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return drv.Commission(ctx, n.NodeRef) })
	})
	phase("inventory", func() {
		if _, err := drv.Inventory(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	})
	phase("configure", func() {
		if _, err := drv.Status(t.Context(), []drivers.NodeRef{n.NodeRef}); err != nil {
			t.Fatal(err)
		}
		mustDone(t, "ApplyNetworking", func(ctx context.Context) (drivers.Result, error) { return drv.ApplyNetworking(ctx, n) })
		mustDone(t, "ApplyStorage", func(ctx context.Context) (drivers.Result, error) { return drv.ApplyStorage(ctx, n) })
		mustDone(t, "ApplyPlatform", func(ctx context.Context) (drivers.Result, error) { return drv.ApplyPlatform(ctx, n) })
	})
	phase("deploy", func() {
		if r, err := drv.Deploy(t.Context(), n, drivers.Deployment{}); err != nil || r.Status == drivers.StatusFailed {
			t.Fatalf("Deploy: %+v %v", r, err)
		}
	})
	for _, p := range []string{"identify", "commission", "inventory", "configure", "deploy"} {
		t.Logf("%s: %v", p, out[p])
	}
	return out, l, drv, n
}

// polls leaves out the reads a waiting step repeats (the machine's state
// while commissioning runs): what is left is what one pass costs.
func withoutPolls(k map[string]int) map[string]int {
	out := maps.Clone(k)
	for key := range out {
		if strings.HasPrefix(key, "GET /machines/ ") || key == "GET /machines/" {
			delete(out, key)
		}
	}
	return out
}

// TestNodeRequestsByKind: one generated node costs MAAS no read the
// driver made a moment before, counted by the lab by kind. Each subtest
// is one cut (issue #39) and failed before it.
func TestNodeRequestsByKind(t *testing.T) {
	ph, _, _, _ := nodePhases(t)
	cfg := withoutPolls(ph["configure"])
	none := func(t *testing.T, k string) {
		if cfg[k] != 0 {
			t.Errorf("configure: %d %s, want none (all requests: %v)", cfg[k], k, cfg)
		}
	}
	// Configure takes the machine the inventory read a moment before,
	// though the configure stage's status read came in between (it
	// replaced the full read in the cache with the state alone).
	t.Run("ConfigureKeepsInventoryRead", func(t *testing.T) { none(t, "GET /machines/{machine}/") })
	// Networking links on the interfaces its writes' answers describe
	// (it read them all again after making the bond and VLANs).
	t.Run("NetworkingNoReread", func(t *testing.T) { none(t, "GET /nodes/{node}/interfaces/") })
	// Inventory reads the machine, its node devices and its
	// commissioning details once each (it read the machine and the node
	// devices twice).
	t.Run("InventoryReadsOnce", func(t *testing.T) {
		want := map[string]int{"GET /machines/{machine}/": 1, "GET /nodes/{node}/devices/": 1, "GET /machines/{machine}/?op=details": 1}
		if got := ph["inventory"]; !maps.Equal(got, want) {
			t.Errorf("inventory: requests %v, want %v", got, want)
		}
	})
}
