package maas

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

// BenchmarkConfigureNode is one generated node's configure stage against
// the lab (in process: its CPU is in the figure): ApplyNetworking,
// ApplyStorage and ApplyPlatform of a commissioned machine on a prepared
// site, each iteration a machine not configured before (-benchtime at
// most configureBenchNodes x; the tag window at its default, the node
// alone on its way). Run with -benchmem.
func BenchmarkConfigureNode(b *testing.B) {
	const configureBenchNodes = 8
	d := genDesign(b, configureBenchNodes)
	l, drv := cfgLab(b, d)
	var nodes []drivers.Node
	for _, name := range slices.Sorted(maps.Keys(d.Nodes)) {
		n := driverspec.Node(d, d.Nodes[name], "")
		pxeBoot(l.Machine(name))
		n.MachineID = identify(b, drv, n).MachineID
		mustDone(b, "Commission", func(ctx context.Context) (drivers.Result, error) { return drv.Commission(ctx, n.NodeRef) })
		nodes = append(nodes, n)
	}
	cfgSubnets(b, drv, driverspec.Site(d))
	for _, n := range nodes { // commissioned: Ready in the lab
		poll(b, "Ready "+n.Name, func(ctx context.Context) (drivers.Result, error) {
			m, err := drv.fetchMachine(ctx, n.MachineID)
			if err != nil || m.StatusName == "Ready" {
				return drivers.Done("ready"), err
			}
			return drivers.InProgress(10*time.Millisecond, "%s", m.StatusName), nil
		})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(nodes) {
			b.Fatalf("more iterations than the %d nodes made: -benchtime %dx at most", len(nodes), len(nodes))
		}
		n := nodes[i]
		i++
		for _, step := range []func(context.Context, drivers.Node) (drivers.Result, error){drv.ApplyNetworking, drv.ApplyStorage, drv.ApplyPlatform} {
			if r, err := step(b.Context(), n); err != nil || r.Status != drivers.StatusDone {
				b.Fatalf("configure %s: %+v %v", n.Name, r, err)
			}
		}
	}
}
