package lab

import (
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/sim/serial"
)

// readConsole collects what the port writes until want shows up.
func readConsole(t *testing.T, out <-chan []byte, want string) string {
	t.Helper()
	var got strings.Builder
	deadline := time.After(5 * time.Second)
	for !strings.Contains(got.String(), want) {
		select {
		case c := <-out:
			got.Write(c)
		case <-deadline:
			t.Fatalf("no %q on the console; it shows:\n%s", want, got.String())
		}
	}
	return got.String()
}

// TestMachineConsole: a machine's serial console shows its POST and boot
// device, the phases it waits, the deployed OS's banner and prompt, and
// echoes what is typed (the prompt again at the end of a line).
func TestMachineConsole(t *testing.T) {
	m := &Machine{Name: "node-1", Serial: serial.New(),
		Hardware: maas.Hardware{Vendor: "Acme", Product: "R650", NICs: []maas.NIC{{MAC: "52:54:00:00:00:01"}}}}
	m.Serial.OnInput(m.typed)
	out, detach := m.Serial.Attach()
	defer detach()

	m.SetBootDevice("pxe", false, true)
	m.PowerOn()
	got := readConsole(t, out, "Booting from PXE: NIC 52:54:00:00:00:01")
	if !strings.Contains(got, "POST complete, Acme R650") {
		t.Errorf("no POST line:\n%s", got)
	}
	m.waited(maas.Phase{Name: maas.PhaseCommission})
	readConsole(t, out, "commissioning scripts finished")
	m.deployed("abc123", "ubuntu", nil)
	readConsole(t, out, "ubuntu node-1 ttyS0\r\nnode-1 login: ")
	m.Serial.Type([]byte("root\r"))
	readConsole(t, out, "root\r\nnode-1 login: ")
	m.PowerCycle()
	readConsole(t, out, "Booting from disk: ubuntu")
}
