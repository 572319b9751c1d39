package ovs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
)

// ovsdb-server killed with SIGKILL and started again: the driver's next
// calls reconnect by themselves (over unix and TCP) and configure the
// ports; while it is down they fail Transient. Killed and started
// between two calls, the next call failed "not connected" before the
// driver reconnected within the call.
func TestReconnectAfterServerCrash(t *testing.T) {
	s := conformanceSwitch(t)
	for _, addr := range []string{s.Unix, s.TCP} {
		d := open(t, map[string]string{driverstest.ConformanceSwitch: addr})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		node := driverstest.NetworkNode()
		if _, err := d.ConfigurePorts(ctx, node, drivers.PhaseQuarantine); err != nil {
			t.Fatal(err)
		}
		if err := s.KillDB(); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ConfigurePorts(ctx, node, drivers.PhaseProduction); drivers.Classify(err) != drivers.Transient {
			t.Errorf("%s down: %v, want a transient error", addr, err)
		}
		if err := s.StartDB(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ConfigurePorts(ctx, node, drivers.PhaseProduction); err != nil {
			t.Fatalf("%s: the first call after ovsdb-server came back: %v", addr, err)
		}
		out, err := s.Vsctl(ctx, "get", "port", "conformance-node/bond0", "trunks")
		if err != nil || out != "[12, 100]\n" {
			t.Errorf("%s: ovs-vsctl get port conformance-node/bond0 trunks: %q, %v", addr, out, err)
		}
		// Killed and back between two calls: the next call does not fail.
		if err := s.KillDB(); err != nil {
			t.Fatal(err)
		}
		if err := s.StartDB(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ConfigurePorts(ctx, node, drivers.PhaseQuarantine); err != nil {
			t.Errorf("%s: the first call after ovsdb-server restarted between calls: %v", addr, err)
		}
		if out, err := s.Vsctl(ctx, "get", "port", "p2", "tag"); err != nil || out != "999\n" {
			t.Errorf("%s: ovs-vsctl get port p2 tag: %q, %v", addr, out, err)
		}
	}
}

// With ovs-vswitchd gone the database takes the change but nothing
// applies it: ConfigurePorts does not report the ports configured (a
// Transient error naming the switch and ovs-vswitchd), and a retry with
// nothing left to write still waits for it rather than saying Done.
func TestChangeNotApplied(t *testing.T) {
	s := conformanceSwitch(t)
	d := open(t, map[string]string{driverstest.ConformanceSwitch: s.Unix})
	node := driverstest.NetworkNode()
	if err := s.KillVswitchd(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := d.ConfigurePorts(ctx, node, drivers.PhaseQuarantine)
		cancel()
		if drivers.Classify(err) != drivers.Transient || !strings.Contains(err.Error(), "ovs-vswitchd did not apply it") ||
			!strings.Contains(err.Error(), "conformance-sw") {
			t.Errorf("call %d: %v, want a transient error saying ovs-vswitchd did not apply the change", i+1, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := s.Vsctl(ctx, "--no-wait", "get", "port", "p1", "tag"); err != nil || strings.TrimSpace(out) != "999" {
		t.Errorf("the database after the calls: p1 tag %q, %v; want 999 stored", out, err)
	}
}
