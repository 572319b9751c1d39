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

// A port of the plan bonded by hand with a port no node is cabled to
// (p2 with p9) is not regrouped: ConfigurePorts fails Permanent naming
// the bond and the fix, and the bond still holds p9.
func TestForeignBondNotRegrouped(t *testing.T) {
	s := conformanceSwitch(t)
	d := open(t, map[string]string{driverstest.ConformanceSwitch: s.Unix})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := s.Vsctl(ctx, "del-port", "p2", "--", "del-port", "p9", "--", "add-bond", driverstest.ConformanceSwitch, "handmade", "p2", "p9"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	_, err := d.ConfigurePorts(ctx, driverstest.NetworkNode(), drivers.PhaseProduction)
	if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "port handmade holds") ||
		!strings.Contains(err.Error(), "ovs-vsctl del-port handmade") {
		t.Fatalf("%v, want a permanent error naming the bond handmade and the fix", err)
	}
	for args, want := range map[string]string{
		"iface-to-br p9":           driverstest.ConformanceSwitch,
		"get port handmade tag":    "[]",
		"get port handmade trunks": "[]",
	} {
		out, err := s.Vsctl(ctx, strings.Fields(args)...)
		if err != nil || strings.TrimSpace(out) != want {
			t.Errorf("ovs-vsctl %s after the refused call: %q, %v; want %q", args, out, err, want)
		}
	}
	if ifaces, err := s.Vsctl(ctx, "list-ifaces", driverstest.ConformanceSwitch); err != nil || !strings.Contains(ifaces, "p9") {
		t.Errorf("list-ifaces: %q, %v", ifaces, err)
	}
}
