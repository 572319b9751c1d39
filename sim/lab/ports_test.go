package lab

import (
	"net"
	"strconv"
	"testing"

	"github.com/slipway-dev/slipway/sim/maas"
)

// TestBMCPortsDistinct: a Redfish service whose first port is another
// machine's IPMI port number (TCP and UDP both free it) is started again
// elsewhere: every power address names one machine, its own (at 1,000
// Redfish machines a dozen collided and the engine identified another
// node's machine).
func TestBMCPortsDistinct(t *testing.T) {
	prev := redfishListen
	t.Cleanup(func() { redfishListen = prev })
	forced := 0
	redfishListen = func(l *Lab, try int) string {
		if try > 0 || forced > 0 {
			return "127.0.0.1:0"
		}
		for _, m := range l.machines[:len(l.machines)-1] { // an earlier machine's IPMI port, free over TCP
			addr := "127.0.0.1:" + strconv.Itoa(m.BMC.Port)
			if ln, err := net.Listen("tcp", addr); err == nil {
				ln.Close()
				forced = m.BMC.Port
				return addr
			}
		}
		return "127.0.0.1:0"
	}
	l, err := Start(t.Context(), Config{Design: exampleDesign(t), TimeScale: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if forced == 0 {
		t.Fatal("no earlier machine's IPMI port was free over TCP: the collision was not forced")
	}
	for _, m := range l.Machines() {
		user, pw := m.BMCCredentials()
		for _, port := range []int{m.BMC.Port, m.BMC.RedfishPort} {
			if port == 0 {
				continue
			}
			got, err := l.machineFor(maas.PowerParams{"power_address": "127.0.0.1:" + strconv.Itoa(port), "power_user": user, "power_pass": pw})
			if err != nil || got != m {
				t.Errorf("power address 127.0.0.1:%d of %s: %v, %v", port, m.Name, got.nameOr(), err)
			}
		}
	}
}

func (m *Machine) nameOr() string {
	if m == nil {
		return "no machine"
	}
	return m.Name
}
