package lab

import (
	"bytes"
	"strings"

	"github.com/slipway-dev/slipway/sim/maas"
)

// What a lab machine writes to its serial console (ttyS0), which its BMC
// carries over Serial over LAN: firmware POST and the boot device, the
// MAAS ephemeral environment's phases, the deployed OS's banner and login
// prompt, and the node agent's progress. Messages are the lab's own, in
// the shape of what such a console shows; they are not captured from real
// machines.

// console writes one line to the machine's serial port, if it has one.
func (m *Machine) console(format string, args ...any) {
	if m.Serial != nil {
		m.Serial.Printf(format, args...)
	}
}

// consolePOST is what the firmware prints at power on; dev is the device
// it boots from.
func (m *Machine) consolePOST(dev, os string) {
	vendor, version, _ := m.Hardware.BIOS()
	m.console("")
	m.console("%s BIOS %s: POST complete, %s %s", vendor, version, m.Hardware.Vendor, m.Hardware.Product)
	switch {
	case dev == "pxe" && len(m.Hardware.NICs) > 0:
		m.console("Booting from PXE: NIC %s", m.Hardware.NICs[0].MAC)
	case dev == "pxe":
		m.console("Booting from PXE")
	case strings.HasPrefix(dev, "cd:"):
		m.console("Booting from virtual CD: %s", strings.TrimPrefix(dev, "cd:"))
	case os != "":
		m.console("Booting from disk: %s", os)
	default:
		m.console("No bootable device found; waiting for a boot override")
	}
}

// consolePhase is what the MAAS ephemeral environment (or the installer)
// prints when a phase ends.
func (m *Machine) consolePhase(p maas.Phase) {
	switch p.Name {
	case PhaseEnlist:
		m.console("maas-enlist: machine enlisted")
	case maas.PhaseCommission:
		m.console("maas-run-remote-scripts: commissioning scripts finished")
	case maas.PhaseDeploy:
		m.console("curtin: installation finished; rebooting into the installed system")
	case maas.PhaseRelease, maas.PhaseErase:
		m.console("maas: machine released (%s done); powering off", p.Name)
	case PhaseBoot:
		m.console("cloud-init: running the bootstrap script")
	}
}

// consoleBooted is the deployed OS's banner and login prompt.
func (m *Machine) consoleBooted(series string) {
	m.console("")
	m.console("%s %s ttyS0", series, m.Name)
	m.prompt()
}

func (m *Machine) prompt() {
	if m.Serial != nil {
		_, _ = m.Serial.Write([]byte(m.Name + " login: "))
	}
}

// typed is the machine's terminal: it echoes what a console types and,
// at the end of a line, prints the login prompt again when an OS runs.
func (m *Machine) typed(p []byte) {
	if m.Serial == nil {
		return
	}
	_, _ = m.Serial.Write(bytes.ReplaceAll(p, []byte("\r"), []byte("\r\n")))
	if bytes.ContainsAny(p, "\r\n") && m.OS() != "" && m.IsPoweredOn() {
		m.prompt()
	}
}

// consoleAgent is the node agent's progress line.
func (m *Machine) consoleAgent(format string, args ...any) {
	m.console("slipway-agent: "+format, args...)
}
