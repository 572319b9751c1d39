package ovs_test

import (
	"context"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/drivers/network/ovs"
	simovs "github.com/slipway-dev/slipway/sim/ovs"
	"github.com/slipway-dev/slipway/sim/ovs/ovstest"
)

// conformanceSwitch starts Open vSwitch with the bridge
// driverstest.ConformanceSwitch and its ports p1, p2, p3 and p9, each a
// veth end.
func conformanceSwitch(t *testing.T) *simovs.Switchd {
	t.Helper()
	s := ovstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.AddBridge(ctx, driverstest.ConformanceSwitch); err != nil {
		t.Fatal(err)
	}
	for _, p := range driverstest.ConformancePorts {
		if _, err := s.Cable(ctx, driverstest.ConformanceSwitch, p, ""); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// open builds the driver for the switches of s by address.
func open(t *testing.T, addrs map[string]string) *ovs.Driver {
	t.Helper()
	cfg := drivers.Config{Settings: map[string]string{}}
	for name, a := range addrs {
		drivers.SwitchSettings(drivers.SwitchEndpoint{Name: name, Address: a}, cfg.Settings, nil)
	}
	d, err := ovs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.(*ovs.Driver).Close() })
	return d.(*ovs.Driver)
}

func TestConformance(t *testing.T) {
	s := conformanceSwitch(t)
	driverstest.RunNetwork(t, func(t *testing.T) drivers.Network {
		return open(t, map[string]string{driverstest.ConformanceSwitch: s.Unix})
	})
}

// Over the loopback TCP listener too.
func TestConformanceTCP(t *testing.T) {
	s := conformanceSwitch(t)
	driverstest.RunNetwork(t, func(t *testing.T) drivers.Network {
		return open(t, map[string]string{driverstest.ConformanceSwitch: s.TCP})
	})
}
