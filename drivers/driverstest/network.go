package driverstest

import (
	"context"
	"fmt"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// UnknownPhase is a phase no driver knows.
const UnknownPhase = drivers.Phase("conformance-no-such-phase")

// The switch and ports NetworkNode is cabled to. A driver's harness for
// the suite gives the switch ConformanceSwitch these ports and
// UnownedPort, which the design cables to no node: the suite checks a
// NetworkReader's drivers never change it.
const (
	ConformanceSwitch = "conformance-sw"
	PXEPort           = "p1"
	BondPortA         = "p2"
	BondPortB         = "p3"
	UnownedPort       = "p9"
)

// ConformancePorts are every port of ConformanceSwitch the suite uses.
var ConformancePorts = []string{PXEPort, BondPortA, BondPortB, UnownedPort}

// Fabric VLANs of NetworkNode.
const (
	ConformancePXEVLAN        = 11
	ConformanceQuarantineVLAN = 999
)

// NetworkNode is the node the network suite configures: one untagged PXE
// interface on one device and a bonded, trunked production interface on
// two, each NIC cabled to a port of ConformanceSwitch.
func NetworkNode() drivers.Node {
	pxe := drivers.Subnet{Name: "pxe", CIDR: "10.0.0.0/24", MTU: 1500, UntaggedVLAN: ConformancePXEVLAN}
	mgmt := drivers.Subnet{Name: "mgmt", CIDR: "10.2.0.0/24", MTU: 9000, UntaggedVLAN: 12}
	prod := drivers.Subnet{Name: "prod", CIDR: "10.1.0.0/24", VLAN: 100, MTU: 9000, Gateway: "10.1.0.1"}
	return drivers.Node{
		NodeRef:  drivers.NodeRef{Name: "conformance-node"},
		Hostname: "conformance-node",
		Rack:     "rack-1",
		Primary:  "prod",
		Fabric: &drivers.NodeFabric{ProvisioningVLAN: ConformancePXEVLAN, QuarantineVLAN: ConformanceQuarantineVLAN,
			PXEInterface: "pxe"},
		Interfaces: []drivers.Interface{
			{
				Name:     "pxe",
				Link:     drivers.Link{Name: "pxe", MTU: 1500, BondMode: "disabled", Trunking: "disabled"},
				Devices:  []drivers.Device{{Alias: "eno1", Switch: ConformanceSwitch, Port: PXEPort}},
				Networks: []drivers.InterfaceNetwork{{Subnet: pxe, Address: "dhcp"}},
			},
			{
				Name: "bond0",
				Link: drivers.Link{Name: "bond0", MTU: 9000, BondMode: "802.3ad", BondHash: "layer3+4", LACPRate: "fast",
					MIIMon: 100, Trunking: "802.1q", NativeNetwork: "mgmt"},
				Devices: []drivers.Device{{Alias: "ens1f0", Switch: ConformanceSwitch, Port: BondPortA},
					{Alias: "ens1f1", Switch: ConformanceSwitch, Port: BondPortB}},
				Networks: []drivers.InterfaceNetwork{{Subnet: mgmt, Address: "10.2.0.10"}, {Subnet: prod, Address: "10.1.0.10"}},
			},
		},
	}
}

// RunNetwork runs the network conformance suite on the driver open
// returns; open is called once per subtest. The suite configures the ports
// of NetworkNode for every phase, ending with production. A driver that
// is a NetworkReader must read back, after each phase, exactly what
// PortPlan says, and UnownedPort as it was before.
//
// Subtests: Probe, ConfigurePorts, ReadBack, UnknownPhase, BadDesign,
// Concurrent, CancelledContext, ExpiredDeadline, CancelDuringCall.
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
		for _, p := range []drivers.Phase{drivers.PhaseProvisioning, drivers.PhaseQuarantine, drivers.PhaseProduction} {
			step := func(ctx context.Context) (drivers.Result, error) { return d.ConfigurePorts(ctx, node, p) }
			c.mustPoll("ConfigurePorts("+string(p)+")", step)
			c.done("ConfigurePorts("+string(p)+") after Done", step)
		}
	})

	h.Run("ReadBack", func(h tb) { readBack(h, open(h), node) })

	h.Run("BadDesign", func(h tb) {
		d := open(h)
		c := newChecker(h)
		ctx, cancel := ctxFor()
		defer cancel()
		bad := NetworkNode()
		bad.Interfaces[1].Networks[0].UntaggedVLAN = 0 // an untagged network no switch VLAN carries
		r, err := d.ConfigurePorts(ctx, bad, drivers.PhaseProduction)
		c.fails("ConfigurePorts of a network with no switch VLAN", r, err)
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

// readBack configures each phase and, on a NetworkReader, reads every
// planned port back, and the unowned port unchanged.
func readBack(h tb, d drivers.Network, node drivers.Node) {
	rd, ok := drivers.ReaderOf(d) // through wrappers (a plugin's client) too
	if !ok {
		return
	}
	c := newChecker(h)
	unowned := []drivers.SwitchPort{{Switch: ConformanceSwitch, Port: UnownedPort}}
	before, err := readPorts(rd, unowned)
	if err != nil {
		h.Fatalf("ReadPorts(%s): %v", unowned[0], err)
	}
	for _, p := range []drivers.Phase{drivers.PhaseProvisioning, drivers.PhaseProduction, drivers.PhaseQuarantine, drivers.PhaseProduction} {
		c.mustPoll("ConfigurePorts("+string(p)+")", func(ctx context.Context) (drivers.Result, error) {
			return d.ConfigurePorts(ctx, node, p)
		})
		want, err := drivers.PortPlan(node, p)
		if err != nil {
			h.Fatalf("PortPlan(%s): %v", p, err)
		}
		refs := make([]drivers.SwitchPort, len(want))
		for i, w := range want {
			refs[i] = w.SwitchPort
		}
		got, err := readPorts(rd, refs)
		if err != nil {
			h.Fatalf("ReadPorts after %s: %v", p, err)
		}
		for i, w := range want {
			if !got[i].Found || !w.Equal(got[i].PortConfig) {
				h.Errorf("after ConfigurePorts(%s) port %s reads %+v (found %v), want %+v: %v", p, w.SwitchPort,
					got[i].PortConfig, got[i].Found, w, w.Diff(got[i].PortConfig))
			}
		}
		after, err := readPorts(rd, unowned)
		if err != nil {
			h.Fatalf("ReadPorts(%s): %v", unowned[0], err)
		}
		if !before[0].Equal(after[0].PortConfig) {
			h.Errorf("ConfigurePorts(%s) changed %s, which no node is cabled to: %v", p, unowned[0], before[0].Diff(after[0].PortConfig))
		}
	}
	missing := []drivers.SwitchPort{{Switch: ConformanceSwitch, Port: "no-such-port"}}
	if got, err := readPorts(rd, missing); err != nil || len(got) != 1 || got[0].Found {
		h.Errorf("ReadPorts of a port the switch lacks: %+v, %v; want one PortState with Found false", got, err)
	}
}

func readPorts(rd drivers.NetworkReader, refs []drivers.SwitchPort) ([]drivers.PortState, error) {
	ctx, cancel := ctxFor()
	defer cancel()
	got, err := rd.ReadPorts(ctx, refs)
	if err == nil && len(got) != len(refs) {
		err = fmt.Errorf("%d PortStates for %d ports", len(got), len(refs))
	}
	return got, err
}
