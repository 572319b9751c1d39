package redfish

import "sync"

// BareMachine is a machine with nothing but power and a boot override
// (which a boot clears when it was for once): for a service without the
// lab around it, as in the driver's tests.
type BareMachine struct {
	mu              sync.Mutex
	on              bool
	dev             string
	persistent, efi bool
	boots           int
	lastBoot        string
}

var _ Machine = (*BareMachine)(nil)

// boot records a boot from the override and clears a one-time one.
// Called with mu held.
func (m *BareMachine) boot() {
	m.boots++
	m.lastBoot = m.dev
	if !m.persistent {
		m.dev = "none"
	}
}

// PowerOn implements Machine.
func (m *BareMachine) PowerOn() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.on {
		m.on = true
		m.boot()
	}
}

// PowerOff implements Machine.
func (m *BareMachine) PowerOff() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on = false
}

// PowerCycle implements Machine.
func (m *BareMachine) PowerCycle() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on = true
	m.boot()
}

// HardReset implements Machine.
func (m *BareMachine) HardReset() { m.PowerCycle() }

// IsPoweredOn implements Machine.
func (m *BareMachine) IsPoweredOn() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.on
}

// SetBootDevice implements Machine.
func (m *BareMachine) SetBootDevice(dev string, persistent, efi bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dev, m.persistent, m.efi = dev, persistent, efi
}

// BootDevice implements Machine.
func (m *BareMachine) BootDevice() (string, bool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dev == "" {
		return "none", false, m.efi
	}
	return m.dev, m.persistent, m.efi
}

// LastBoot is the boot device of the machine's last boot, and how many
// times it booted.
func (m *BareMachine) LastBoot() (string, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastBoot, m.boots
}
