package ovs_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/drivers/network/ovs"
)

// A switch that does not answer (no socket; a closed TCP port): Probe,
// ConfigurePorts and ReadPorts fail Transient within the connect bound,
// naming the switch, its address and what to check.
func TestSwitchDoesNotAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "tcp:" + ln.Addr().String()
	ln.Close()
	for _, addr := range []string{"unix:" + t.TempDir() + "/no.sock", closed} {
		d := open(t, map[string]string{driverstest.ConformanceSwitch: addr})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		_, perr := d.Probe(ctx)
		_, cerr := d.ConfigurePorts(ctx, driverstest.NetworkNode(), drivers.PhaseProduction)
		_, rerr := d.ReadPorts(ctx, []drivers.SwitchPort{{Switch: driverstest.ConformanceSwitch, Port: "p1"}})
		cancel()
		for what, err := range map[string]error{"Probe": perr, "ConfigurePorts": cerr, "ReadPorts": rerr} {
			if drivers.Classify(err) != drivers.Transient {
				t.Errorf("%s at %s: %v, want a transient error", what, addr, err)
				continue
			}
			for _, want := range []string{driverstest.ConformanceSwitch, addr, "does not answer", "ovsdb-server"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %q lacks %q", what, err, want)
				}
			}
		}
		if el := time.Since(start); el > 20*time.Second {
			t.Errorf("three calls to a dead switch took %v", el)
		}
	}
}

// A port the bridge does not have is a Permanent error naming the
// switch, the port and the node, and nothing is written.
func TestPortTheBridgeLacks(t *testing.T) {
	s := conformanceSwitch(t)
	d := open(t, map[string]string{driverstest.ConformanceSwitch: s.Unix})
	n := driverstest.NetworkNode()
	n.Interfaces[1].Devices[1].Port = "p77"
	size := func() int64 {
		fi, err := os.Stat(s.Dir + "/conf.db")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	_, err := d.ConfigurePorts(context.Background(), n, drivers.PhaseProduction)
	if drivers.Classify(err) != drivers.Permanent {
		t.Fatalf("%v, want a permanent error", err)
	}
	for _, want := range []string{"switch conformance-sw", "no port p77", "node conformance-node", "ovs-vsctl add-port"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if after := size(); after != before {
		t.Errorf("conf.db grew from %d to %d bytes: something was written", before, after)
	}
}

// A VLAN no switch carries (4095, reserved) is refused before anything
// is sent, naming the node and the port.
func TestVLANTheSwitchCannotCarry(t *testing.T) {
	d := open(t, map[string]string{driverstest.ConformanceSwitch: "unix:/nonexistent/db.sock"})
	n := driverstest.NetworkNode()
	n.Fabric.QuarantineVLAN = 4095
	_, err := d.ConfigurePorts(context.Background(), n, drivers.PhaseQuarantine)
	if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "VLAN 4095") ||
		!strings.Contains(err.Error(), "conformance-node") {
		t.Fatalf("%v, want a permanent error naming VLAN 4095 and the node", err)
	}
}

// Settings the driver cannot use are refused when it is built:
// credentials (OVSDB over unix: and tcp: takes none; the password never
// appears in the error), an unknown setting, a bad address.
func TestNewRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		e    drivers.SwitchEndpoint
		want string
	}{
		"credentials": {drivers.SwitchEndpoint{Name: "sw", Address: "unix:/run/db.sock", Username: "admin", Password: drivers.NewSecret("hunter22")}, "takes none"},
		"setting":     {drivers.SwitchEndpoint{Name: "sw", Address: "unix:/run/db.sock", Settings: map[string]string{"vrf": "x"}}, "unknown setting switch.sw.vrf"},
		"relative":    {drivers.SwitchEndpoint{Name: "sw", Address: "unix:run/db.sock"}, "absolute"},
		"ssl":         {drivers.SwitchEndpoint{Name: "sw", Address: "ssl:10.0.0.1:6640"}, "not supported"},
		"port":        {drivers.SwitchEndpoint{Name: "sw", Address: "tcp:10.0.0.1:0"}, "1..65535"},
		"scheme":      {drivers.SwitchEndpoint{Name: "sw", Address: "http://10.0.0.1"}, "unknown scheme"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := drivers.Config{Settings: map[string]string{}, Secrets: map[string]drivers.Secret{}}
			drivers.SwitchSettings(c.e, cfg.Settings, cfg.Secrets)
			_, err := ovs.New(cfg)
			if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want a permanent error saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter22") {
				t.Errorf("the error reveals the password: %v", err)
			}
		})
	}
	var de *drivers.Error
	_, err := ovs.New(drivers.Config{Settings: map[string]string{"bridge": "br0"}})
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "unknown settings bridge") {
		t.Errorf("a setting of no switch: %v", err)
	}
}

// A switch that accepts the connection but never answers fails Probe
// Transient within the connect bound (5 s), naming it.
func TestSwitchHangs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c // read nothing, answer nothing
		}
	}()
	defer func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	addr := "tcp:" + ln.Addr().String()
	d := open(t, map[string]string{"sw": addr})
	start := time.Now()
	_, err = d.Probe(context.Background())
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Probe of a silent switch took %v", el)
	}
	if drivers.Classify(err) != drivers.Transient || !strings.Contains(err.Error(), "switch sw ("+"OVSDB "+addr+") does not answer") {
		t.Fatalf("%v, want a transient error naming the switch and its address", err)
	}
}

// While one call waits on a silent switch's connect (up to 5 s), a
// second call to the same switch whose context ends returns at once
// instead of queueing behind the connect.
func TestCancelWhileAnotherConnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	defer func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	d := open(t, map[string]string{"sw": "tcp:" + ln.Addr().String()})
	first := make(chan error, 1)
	go func() {
		_, err := d.Probe(context.Background())
		first <- err
	}()
	time.Sleep(200 * time.Millisecond) // the first call is connecting
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = d.Probe(ctx)
	if el := time.Since(start); el > time.Second {
		t.Errorf("the second call returned %v after its context ended (after %v)", el-100*time.Millisecond, el)
	}
	if err == nil {
		t.Error("the second call succeeded against a silent switch")
	}
	if err := <-first; err == nil {
		t.Error("the first call succeeded against a silent switch")
	}
}
