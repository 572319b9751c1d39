package gnmi_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	gnmidrv "github.com/slipway-dev/slipway/drivers/network/gnmi"
)

// TestSilentSwitchIsBoundedByTheTimeout: a switch that accepts the
// connection and never says a word fails each call after the driver's
// own timeout (the caller's context has no deadline), Transient, naming
// the switch, its address and the setting to check.
func TestSilentSwitchIsBoundedByTheTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // read nothing, answer nothing
			mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	settings, secrets := map[string]string{"timeout": "700ms"}, map[string]drivers.Secret{}
	drivers.SwitchSettings(drivers.SwitchEndpoint{Name: driverstest.ConformanceSwitch, Address: ln.Addr().String(), Username: testUser,
		Password: drivers.NewSecret(testPassword)}, settings, secrets)
	d, err := gnmidrv.Open(drivers.Config{Settings: settings, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, call := range []struct {
		name string
		run  func() error
	}{
		{"Probe", func() error { _, err := d.Probe(t.Context()); return err }},
		{"ConfigurePorts", func() error {
			_, err := d.ConfigurePorts(t.Context(), driverstest.NetworkNode(), drivers.PhaseProduction)
			return err
		}},
		{"ReadPorts", func() error {
			_, err := d.ReadPorts(t.Context(), []drivers.SwitchPort{{Switch: driverstest.ConformanceSwitch, Port: driverstest.PXEPort}})
			return err
		}},
	} {
		start := time.Now()
		err := call.run()
		took := time.Since(start)
		wantErr(t, err, drivers.Transient, driverstest.ConformanceSwitch, ln.Addr().String(), "does not answer")
		if took < 600*time.Millisecond || took > 5*time.Second {
			t.Errorf("%s gave up after %s; want the 700ms timeout", call.name, took)
		}
	}
	select {
	case <-accepted:
	default:
		t.Fatal("the driver never connected to the silent switch: the test proved nothing")
	}
}
