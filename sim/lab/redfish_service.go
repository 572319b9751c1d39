package lab

import simrf "github.com/slipway-dev/slipway/sim/redfish"

// Redfish is the machine's Redfish service (its BMC's, with its virtual
// CD, BIOS and counters: what tests count from), nil when its BMC speaks
// only IPMI.
func (m *Machine) Redfish() *simrf.Service {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rf
}
