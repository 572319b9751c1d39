package lab

import (
	"fmt"
	"slices"

	simgnmi "github.com/slipway-dev/slipway/sim/gnmi"
)

// The credentials of the lab's gNMI target `orchestrator lab --gnmi`
// starts (like DefaultBMCPassword, a lab's and documented).
const (
	DefaultSwitchUser     = "admin"
	DefaultSwitchPassword = "lab-switch-password"
)

// GNMI is the target Config.GNMI started (nil: none).
func (l *Lab) GNMI() *simgnmi.Target { return l.gnmi }

// GNMIOptions configure the lab's gNMI target (sim/gnmi).
type GNMIOptions struct {
	Username string // the switches' user (required)
	Password string // its password (required)
	MaxVLAN  int    // the highest VLAN the switches carry (0: 4094)
	Strict   bool   // a port may carry only VLANs created on its switch
}

// StartGNMI starts a gNMI target on loopback serving every switch the
// lab's machines are cabled to (the design's cabling): each cabled port
// exists, its link up, and its LLDP neighbour is the machine's NIC (its
// MAC as chassis ID, the node's name as system name, the NIC's design
// alias as port ID, its kernel name as port description). Nothing
// starts it by default; the caller closes the target.
func (l *Lab) StartGNMI(o GNMIOptions) (*simgnmi.Target, error) {
	t, err := simgnmi.Start(simgnmi.Config{Username: o.Username, Password: o.Password, MaxVLAN: o.MaxVLAN,
		Strict: o.Strict, Log: l.log})
	if err != nil {
		return nil, err
	}
	if err := l.SeedGNMI(t); err != nil {
		t.Close()
		return nil, fmt.Errorf("lab gNMI target: %w", err)
	}
	return t, nil
}

// SeedGNMI gives a running target the lab's cabling, as StartGNMI does
// (for a target started before the lab, whose address the design's
// fabric already names).
func (l *Lab) SeedGNMI(t *simgnmi.Target) error {
	type cable struct {
		sw, port string
		n        simgnmi.Neighbor
	}
	var cables []cable
	ports := map[string][]string{}
	for _, m := range l.Machines() {
		for _, nic := range m.Hardware.NICs {
			nb := nic.Neighbor
			if nb == nil || nb.SysName == "" || nb.PortID == "" {
				continue
			}
			if !slices.Contains(ports[nb.SysName], nb.PortID) {
				ports[nb.SysName] = append(ports[nb.SysName], nb.PortID)
			}
			cables = append(cables, cable{sw: nb.SysName, port: nb.PortID, n: simgnmi.Neighbor{ChassisID: nic.MAC,
				SystemName: m.Name, PortID: nic.Alias, PortDescr: nic.Name}})
		}
	}
	for sw, ps := range ports {
		if err := t.AddSwitch(sw, ps...); err != nil {
			return err
		}
	}
	for _, c := range cables {
		if err := t.SetNeighbor(c.sw, c.port, &c.n); err != nil {
			return err
		}
	}
	return nil
}
