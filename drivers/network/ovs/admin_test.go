package ovs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
)

// A planned port taken administratively down behind the driver's back
// (ovs-ofctl mod-port ... down: OVSDB cannot bring it up again) reads
// back disabled, and ConfigurePorts does not report it configured: it
// asks for an operator, naming the port, the node and the command.
// ConfigurePorts returned Done for it before.
func TestAdminDownPort(t *testing.T) {
	s := conformanceSwitch(t)
	d := open(t, map[string]string{driverstest.ConformanceSwitch: s.Unix})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node := driverstest.NetworkNode()
	if _, err := d.ConfigurePorts(ctx, node, drivers.PhaseProduction); err != nil {
		t.Fatal(err)
	}
	if out, err := s.Ofctl(ctx, "mod-port", driverstest.ConformanceSwitch, "p1", "down"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	state := ""
	for i := 0; i < 100 && state != "down"; i++ {
		time.Sleep(time.Duration(min(i, 1)) * 50 * time.Millisecond)
		out, _ := s.Vsctl(ctx, "get", "interface", "p1", "admin_state")
		state = strings.TrimSpace(out)
	}
	if state != "down" {
		t.Fatalf("ovs-vsctl get interface p1 admin_state: %q after mod-port down", state)
	}
	got, err := d.ReadPorts(ctx, []drivers.SwitchPort{{Switch: driverstest.ConformanceSwitch, Port: "p1"}})
	if err != nil || len(got) != 1 || !got[0].Found || got[0].Enabled {
		t.Errorf("ReadPorts of the downed p1: %+v, %v; want found and disabled", got, err)
	}
	_, err = d.ConfigurePorts(ctx, node, drivers.PhaseProduction)
	if drivers.Classify(err) != drivers.NeedsIntervention {
		t.Fatalf("ConfigurePorts with p1 administratively down: %v, want needs-intervention", err)
	}
	for _, want := range []string{"p1", "conformance-node", "ovs-ofctl mod-port conformance-sw p1 up"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if out, err := s.Ofctl(ctx, "mod-port", driverstest.ConformanceSwitch, "p1", "up"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for i := 0; i < 100; i++ {
		if _, err = d.ConfigurePorts(ctx, node, drivers.PhaseProduction); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("ConfigurePorts after mod-port up: %v", err)
	}
}
