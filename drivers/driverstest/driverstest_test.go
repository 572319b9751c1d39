package driverstest_test

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/drivers/network/noop"
)

var scripts = []struct {
	name   string
	script fake.Script
}{
	{"plain", fake.Script{}},
	{"polls", fake.Script{Polls: 3}},
}

func bmc() drivers.BMC {
	return drivers.BMC{Node: "node-1", Address: "10.0.0.11", Port: 623, Protocol: "lanplus", CipherSuite: 17,
		Privilege: "administrator", Username: "admin", Password: drivers.NewSecret("good-pass-91b2")}
}

func node() drivers.Node {
	n := driverstest.NetworkNode()
	n.Name, n.Hostname = "node-1", "node-1"
	n.BootMAC = "52:54:00:00:00:01"
	n.Platform = drivers.Platform{Image: "ubuntu/jammy"}
	return n
}

func TestFakeOOB(t *testing.T) {
	for _, s := range scripts {
		t.Run(s.name, func(t *testing.T) {
			driverstest.RunOOB(t, func(*testing.T) (drivers.OOB, drivers.BMC) { return fake.NewOOB(s.script), bmc() })
		})
	}
	// One driver for every subtest, as with a real BMC.
	t.Run("shared", func(t *testing.T) {
		d := fake.NewOOB(fake.Script{Polls: 3})
		driverstest.RunOOB(t, func(*testing.T) (drivers.OOB, drivers.BMC) { return d, bmc() })
		if p := d.Power(bmc().Address); p != drivers.PowerOff {
			t.Errorf("the suite left the machine %s, want off", p)
		}
	})
}

func TestFakeServer(t *testing.T) {
	for _, s := range scripts {
		t.Run(s.name, func(t *testing.T) {
			driverstest.RunServer(t, func(*testing.T) drivers.Server { return fake.NewServer(s.script) }, node())
		})
	}
	t.Run("shared", func(t *testing.T) {
		d := fake.NewServer(fake.Script{Polls: 3})
		driverstest.RunServer(t, func(*testing.T) drivers.Server { return d }, node())
		ms := d.Machines()
		if len(ms) != 1 || ms[0].State != fake.StateReady || ms[0].Node != "node-1" {
			t.Errorf("the suite left %+v, want one Ready machine", ms)
		}
	})
}

func TestFakeNetwork(t *testing.T) {
	for _, s := range scripts {
		t.Run(s.name, func(t *testing.T) {
			driverstest.RunNetwork(t, func(*testing.T) drivers.Network { return fake.NewNetwork(s.script) })
		})
	}
	t.Run("shared", func(t *testing.T) {
		d := fake.NewNetwork(fake.Script{})
		driverstest.RunNetwork(t, func(*testing.T) drivers.Network { return d })
		if p := d.Phase(driverstest.NetworkNode().Name); p != drivers.PhaseProduction {
			t.Errorf("the suite left phase %q, want production", p)
		}
	})
}

func TestNoopNetwork(t *testing.T) {
	driverstest.RunNetwork(t, func(t *testing.T) drivers.Network {
		d, err := noop.New(drivers.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}
