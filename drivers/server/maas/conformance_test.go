package maas

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/sim/lab"
)

// TestConformance runs the driver conformance suite against the lab's MAAS,
// with a lab machine the driver enlists by its boot MAC.
func TestConformance(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 1})
	m := l.Machines()[0]
	node := drivers.Node{NodeRef: drivers.NodeRef{Name: m.Name}, Hostname: m.Name,
		BootMAC: m.Hardware.NICs[0].MAC, Platform: drivers.Platform{Image: "jammy"}}
	d := newTestDriver(t, l, nil)
	driverstest.RunServer(t, func(t *testing.T) drivers.Server { return d }, node)
}

func TestFactory(t *testing.T) {
	if _, err := New(drivers.Config{}); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("no URL: %v", err)
	}
	if _, err := New(drivers.Config{Settings: map[string]string{SettingURL: "http://127.0.0.1:1/MAAS"}}); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("no API key: %v", err)
	}
	_, err := New(drivers.Config{Settings: map[string]string{SettingURL: "http://127.0.0.1:1/MAAS"},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret("not-a-key")}})
	if err == nil || drivers.Classify(err) != drivers.Permanent {
		t.Errorf("bad key: %v", err)
	}
}
