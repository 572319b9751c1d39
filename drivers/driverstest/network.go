package driverstest

import (
	"context"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// UnknownPhase is a phase no driver knows.
const UnknownPhase = drivers.Phase("conformance-no-such-phase")

// NetworkNode is the node the network suite configures: one untagged PXE
// interface on one device and a bonded, trunked production interface on
// two.
func NetworkNode() drivers.Node {
	pxe := drivers.Subnet{Name: "pxe", CIDR: "10.0.0.0/24", MTU: 1500}
	prod := drivers.Subnet{Name: "prod", CIDR: "10.1.0.0/24", VLAN: 100, MTU: 9000, Gateway: "10.1.0.1"}
	return drivers.Node{
		NodeRef:  drivers.NodeRef{Name: "conformance-node"},
		Hostname: "conformance-node",
		Rack:     "rack-1",
		Primary:  "prod",
		Interfaces: []drivers.Interface{
			{
				Name:     "pxe",
				Link:     drivers.Link{Name: "pxe", MTU: 1500, BondMode: "disabled", Trunking: "disabled"},
				Devices:  []drivers.Device{{Alias: "eno1"}},
				Networks: []drivers.InterfaceNetwork{{Subnet: pxe, Address: "dhcp"}},
			},
			{
				Name: "bond0",
				Link: drivers.Link{Name: "bond0", MTU: 9000, BondMode: "802.3ad", BondHash: "layer3+4", LACPRate: "fast",
					MIIMon: 100, Trunking: "802.1q", NativeNetwork: "prod"},
				Devices:  []drivers.Device{{Alias: "ens1f0"}, {Alias: "ens1f1"}},
				Networks: []drivers.InterfaceNetwork{{Subnet: prod, Address: "10.1.0.10"}},
			},
		},
	}
}

// RunNetwork runs the network conformance suite on the driver open
// returns; open is called once per subtest. The suite configures the ports
// of NetworkNode for both phases, ending with production.
//
// Subtests: Probe, ConfigurePorts, UnknownPhase, Concurrent,
// CancelledContext, ExpiredDeadline, CancelDuringCall.
func RunNetwork(t *testing.T, open func(t *testing.T) drivers.Network) {
	t.Helper()
	runNetwork(realT{t}, func(h tb) drivers.Network { return open(testingT(h)) })
}

func runNetwork(h tb, open func(tb) drivers.Network) {
	node := NetworkNode()
	h.Run("Probe", func(h tb) {
		d := open(h)
		c := newChecker(h)
		ctx, cancel := ctxFor()
		defer cancel()
		info, err := d.Probe(ctx)
		c.checkErr("Probe", err)
		if err != nil || !info.Reachable {
			h.Errorf("Probe: %+v, %v; want reachable", info, err)
		}
	})

	h.Run("ConfigurePorts", func(h tb) {
		d := open(h)
		c := newChecker(h)
		for _, p := range []drivers.Phase{drivers.PhaseProvisioning, drivers.PhaseProduction} {
			step := func(ctx context.Context) (drivers.Result, error) { return d.ConfigurePorts(ctx, node, p) }
			c.mustPoll("ConfigurePorts("+string(p)+")", step)
			c.done("ConfigurePorts("+string(p)+") after Done", step)
		}
	})

	h.Run("UnknownPhase", func(h tb) {
		d := open(h)
		c := newChecker(h)
		ctx, cancel := ctxFor()
		defer cancel()
		r, err := d.ConfigurePorts(ctx, node, UnknownPhase)
		c.fails("ConfigurePorts of an unknown phase", r, err)
	})

	h.Run("Concurrent", func(h tb) {
		d := open(h)
		c := newChecker(h)
		concurrently(concurrency, func(int) {
			ctx, cancel := ctxFor()
			defer cancel()
			if _, err := d.Probe(ctx); err != nil {
				c.checkErr("concurrent Probe", err)
				h.Errorf("concurrent Probe: %v", err)
			}
			c.poll("concurrent ConfigurePorts(production)", func(ctx context.Context) (drivers.Result, error) {
				return d.ConfigurePorts(ctx, node, drivers.PhaseProduction)
			})
		})
	})

	runContextChecks(h, func(h tb) ([]ctxCall, []string) {
		return networkCtxCalls(open(h), node), nil
	})
}

// networkCtxCalls are the calls of the context checks.
func networkCtxCalls(d drivers.Network, node drivers.Node) []ctxCall {
	return []ctxCall{
		{name: "Probe", readOnly: true, call: func(ctx context.Context) (drivers.Result, error) {
			_, err := d.Probe(ctx)
			return noResult(err)
		}},
		{name: "ConfigurePorts", call: func(ctx context.Context) (drivers.Result, error) {
			return d.ConfigurePorts(ctx, node, drivers.PhaseProduction)
		}},
	}
}
