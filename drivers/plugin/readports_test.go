package plugin

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/drivers/network/noop"
)

// readsBack configures the conformance node's production ports through
// d and reads them back through its read-back side: what crossed must be
// what drivers.PortPlan says.
func readsBack(t *testing.T, d drivers.Network) {
	t.Helper()
	rd, ok := drivers.ReaderOf(d)
	if !ok {
		t.Fatal("a plugin of the fake network driver (a NetworkReader) does not read ports back")
	}
	node := driverstest.NetworkNode()
	if _, err := d.ConfigurePorts(t.Context(), node, drivers.PhaseProduction); err != nil {
		t.Fatal(err)
	}
	plan, err := drivers.PortPlan(node, drivers.PhaseProduction)
	if err != nil || len(plan) == 0 {
		t.Fatalf("plan: %v %v", plan, err)
	}
	ports := make([]drivers.SwitchPort, len(plan))
	for i, p := range plan {
		ports[i] = p.SwitchPort
	}
	st, err := rd.ReadPorts(t.Context(), ports)
	if err != nil || len(st) != len(plan) {
		t.Fatalf("ReadPorts: %d states, %v", len(st), err)
	}
	for i, p := range plan {
		if !st[i].Found || !p.Equal(st[i].PortConfig) {
			t.Errorf("port %s read back %+v, want %+v", p.SwitchPort, st[i], p)
		}
	}
}

// ReadPorts crosses the plugin protocol for a driver that reads ports
// (the conformance suite's ReadBack runs through it), and a driver that
// does not (noop) is not a reader on the orchestrator's side either.
func TestReadPortsOverGRPCConn(t *testing.T) {
	t.Run("fake reads", func(t *testing.T) {
		readsBack(t, dispenseGRPC(t, Drivers{Network: fake.NetworkFactory}, drivers.KindNetwork, drivers.Config{}).(drivers.Network))
	})
	t.Run("conformance/fake", func(t *testing.T) {
		driverstest.RunNetwork(t, func(t *testing.T) drivers.Network {
			return dispenseGRPC(t, Drivers{Network: fake.NetworkFactory}, drivers.KindNetwork, drivers.Config{}).(drivers.Network)
		})
	})
	t.Run("noop does not read", func(t *testing.T) {
		d := dispenseGRPC(t, Drivers{Network: noop.New}, drivers.KindNetwork, drivers.Config{}).(drivers.Network)
		if _, ok := drivers.ReaderOf(d); ok {
			t.Error("a plugin of noop (no NetworkReader) reads ports back")
		}
	})
}

// The same through a plugin process, as serve runs one.
func TestReadPortsSubprocess(t *testing.T) {
	log := zerolog.Nop()
	readsBack(t, Network{external(t, drivers.KindNetwork, "slipway-driver-any-fake", nil, log)})
	if _, ok := drivers.ReaderOf(Network{external(t, drivers.KindNetwork, "slipway-driver-network-noop", nil, log)}); ok {
		t.Error("the noop plugin process reads ports back")
	}
}
