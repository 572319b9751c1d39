package ovs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
)

// TestLAGNameTakenByAnotherPort: a Port the bridge already has under the
// name the driver gives the node's bond (NODE/LAG), holding an
// interface no node is cabled to, is not taken over and the call does
// not fail as a passing conflict to retry for ever: Permanent, naming
// the Port, the node and the fix; the Port still holds its interface.
func TestLAGNameTakenByAnotherPort(t *testing.T) {
	s := conformanceSwitch(t)
	d := open(t, map[string]string{driverstest.ConformanceSwitch: s.Unix})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const name = "conformance-node/bond0"
	if out, err := s.Vsctl(ctx, "--", "--id=@i", "create", "Interface", "name=opx9", "type=internal",
		"--", "--id=@p", "create", "Port", "name="+name, "interfaces=@i",
		"--", "add", "Bridge", driverstest.ConformanceSwitch, "ports", "@p"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	_, err := d.ConfigurePorts(ctx, driverstest.NetworkNode(), drivers.PhaseProduction)
	if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "ovs-vsctl del-port "+name) {
		t.Fatalf("%v (%s), want a permanent error naming the port %s and the fix", err, drivers.Classify(err), name)
	}
	if out, err := s.Vsctl(ctx, "iface-to-br", "opx9"); err != nil || strings.TrimSpace(out) != driverstest.ConformanceSwitch {
		t.Errorf("ovs-vsctl iface-to-br opx9: %q, %v", out, err)
	}
	if out, err := s.Vsctl(ctx, "get", "Port", name, "interfaces"); err != nil || strings.Count(out, "-") != 4 {
		t.Errorf("the port %s now holds %q (%v), want its one interface", name, out, err)
	}
}
