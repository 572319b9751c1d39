package lab

import (
	"sync"
	"time"

	"github.com/slipway-dev/slipway/sim/maas"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
	"github.com/slipway-dev/slipway/sim/serial"
)

// Machine is a simulated server: hardware, power, a boot device, and what
// runs on it. It implements bmc.Chassis, so its simulated BMC drives it.
type Machine struct {
	Name     string // the design node it stands for, or a generated name
	Hardware maas.Hardware
	BMC      BMCInfo
	Serial   *serial.Port // its console (ttyS0), carried by its BMC's Serial over LAN

	lab  *Lab
	site string // the design's Site of its node ("" for generic machines)

	mu         sync.Mutex
	on         bool
	bootDev    string
	persistent bool
	efi        bool
	os         string             // "" (nothing installed) or the deployed OS (ubuntu, custom)
	image      maas.DeployedImage // what the region installed (image.go)
	userData   []byte
	boots      int
	agent      *agentRun // the node agent of the current (or last) deployment
	systemID   string    // MAAS's, as of the last deployment
	phases     []maas.Phase
	rf         *simrf.Service // its BMC's Redfish service, when it speaks Redfish (its virtual CD)
	noPXE      bool           // the machine cannot PXE-boot (vmedia.go)
	bootLog    []string       // where it booted from (vmedia.go)
}

// PowerOn powers the machine on and boots it.
func (m *Machine) PowerOn() {
	m.mu.Lock()
	was := m.on
	m.on = true
	m.mu.Unlock()
	if !was {
		m.boot()
	}
}

// PowerOff cuts the power.
func (m *Machine) PowerOff() {
	m.mu.Lock()
	m.on = false
	m.mu.Unlock()
}

// PowerCycle turns the machine off and on again, whatever its state.
func (m *Machine) PowerCycle() {
	m.mu.Lock()
	m.on = true
	m.mu.Unlock()
	m.boot()
}

// HardReset reboots a running machine; a machine that is off stays off.
func (m *Machine) HardReset() {
	m.mu.Lock()
	on := m.on
	m.mu.Unlock()
	if on {
		m.boot()
	}
}

// IsPoweredOn reports the power state.
func (m *Machine) IsPoweredOn() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.on
}

// SetBootDevice selects the next boot device.
func (m *Machine) SetBootDevice(dev string, persistent, efi bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bootDev, m.persistent, m.efi = dev, persistent, efi
}

// BootDevice returns the selected boot device.
func (m *Machine) BootDevice() (string, bool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bootDev, m.persistent, m.efi
}

// boot is what happens at power on: from PXE (or the provisioner's boot
// ISO in the virtual CD, vmedia.go), a machine MAAS doesn't know enlists
// itself after the enlistment time; a one-time boot device reverts to the
// default afterwards.
func (m *Machine) boot() {
	m.mu.Lock()
	m.boots++
	dev, os, hasPXE, rf := m.bootDev, m.os, !m.noPXE, m.rf
	if !m.persistent {
		m.bootDev = ""
	}
	m.mu.Unlock()
	if rf != nil {
		rf.SystemReset() // staged BIOS settings and firmware take effect at any boot, not only a Redfish reset's
	}
	src, image := m.bootSource(rf, dev, hasPXE) // vmedia.go
	m.mu.Lock()
	m.logBoot(src)
	m.mu.Unlock()
	switch src {
	case BootFromCD, BootFromProvisioner:
		dev = "cd:" + isoName(image)
	case BootFromDisk:
		dev = "" // no PXE, or nothing in the virtual CD
	}
	m.consolePOST(dev, os)
	if (src == BootFromPXE || src == BootFromProvisioner) && m.lab != nil {
		m.lab.pxeBoot(m)
	}
}

// UserData returns what the deployed OS received (the node agent's input).
func (m *Machine) UserData() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]byte(nil), m.userData...)
}

// OS returns the installed OS series, "" when none.
func (m *Machine) OS() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.os
}

// deployed: the OS is installed and boots; a node agent starts when the
// user data carries a bootstrap.env (agent.go).
func (m *Machine) deployed(systemID, osystem string, userData []byte) {
	m.deployedImage(systemID, maas.DeployedImage{OSystem: osystem}, userData)
}

// deployedImage: deployed with the image the region installed.
func (m *Machine) deployedImage(systemID string, img maas.DeployedImage, userData []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.os, m.image, m.userData, m.on, m.systemID = img.OSystem, img, userData, true, systemID
	m.consoleBooted(img.OSystem)
	m.startAgentLocked(userData)
}

// released: erased and off; a running node agent is cancelled (its record
// stays until the next deployment).
func (m *Machine) released() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.os, m.image, m.userData, m.on = "", maas.DeployedImage{}, nil, false
	m.stopAgentLocked("machine released")
}

// timeAfter is time.AfterFunc, scaled by the lab.
func (l *Lab) timeAfter(d time.Duration, fn func()) {
	time.AfterFunc(l.scaled(d), fn)
}

// BMCCredentials returns the user and password the machine's simulated BMC
// accepts (lab fixtures: the design's, or the lab defaults).
func (m *Machine) BMCCredentials() (user, password string) {
	return m.BMC.Username, m.BMC.password
}
