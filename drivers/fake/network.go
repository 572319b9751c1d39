package fake

import (
	"context"

	"github.com/slipway-dev/slipway/drivers"
)

// Network is a fake network driver recording the phase each node's ports
// were configured for, and each port as drivers.PortPlan says it was
// configured (a NetworkReader).
type Network struct {
	core
	phases map[string]drivers.Phase // node name -> phase last configured
	ports  map[drivers.SwitchPort]drivers.PortState
}

var (
	_ drivers.Network       = (*Network)(nil)
	_ drivers.NetworkReader = (*Network)(nil)
)

// NewNetwork returns a fake network driver following s.
func NewNetwork(s Script) *Network {
	return &Network{core: core{script: s}, phases: map[string]drivers.Phase{}, ports: map[drivers.SwitchPort]drivers.PortState{}}
}

// AddPorts gives a switch ports the design cables to nothing (they read
// back Found, disabled, VLAN 1), so a test can check they stay so.
func (f *Network) AddPorts(sw string, ports ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range ports {
		k := drivers.SwitchPort{Switch: sw, Port: p}
		f.ports[k] = drivers.PortState{PortConfig: drivers.PortConfig{SwitchPort: k, Mode: drivers.ModeAccess, VLAN: 1}, Found: true}
	}
}

// SetPort changes a port behind the driver's back (a test's drift).
func (f *Network) SetPort(p drivers.PortConfig) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ports[p.SwitchPort] = drivers.PortState{PortConfig: p, Found: true, Up: p.Enabled}
}

// Phase returns the phase the node's ports were last configured for ("" if
// never).
func (f *Network) Phase(node string) drivers.Phase {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.phases[node]
}

// Probe reports the fake switches reachable.
func (f *Network) Probe(ctx context.Context) (drivers.NetworkInfo, error) {
	if _, stop, err := f.begin(ctx, "Probe", "", false); stop {
		return drivers.NetworkInfo{}, err
	}
	return drivers.NetworkInfo{Reachable: true, Description: "fake switches"}, nil
}

// ConfigurePorts records the node's ports as configured for phase.
func (f *Network) ConfigurePorts(ctx context.Context, n drivers.Node, phase drivers.Phase) (drivers.Result, error) {
	if r, stop, err := f.begin(ctx, "ConfigurePorts", n.Name, true); stop {
		return r, err
	}
	if !drivers.KnownPhase(phase) {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: unknown phase %q", phase)
	}
	plan, err := drivers.PortPlan(n, phase)
	if err != nil {
		return drivers.Result{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := 0
	for _, p := range plan {
		if cur, ok := f.ports[p.SwitchPort]; !ok || !cur.Equal(p) {
			f.ports[p.SwitchPort] = drivers.PortState{PortConfig: p, Found: true, Up: p.Enabled}
			changed++
		}
	}
	if f.phases[n.Name] == phase && changed == 0 {
		return drivers.Done("fake: ports of %s already configured for %s", n.Name, phase), nil
	}
	f.phases[n.Name] = phase
	return drivers.Done("fake: configured the %d ports of %s for %s (%d changed)", len(plan), n.Name, phase, changed), nil
}

// ReadPorts answers each port as last configured.
func (f *Network) ReadPorts(ctx context.Context, ports []drivers.SwitchPort) ([]drivers.PortState, error) {
	if _, stop, err := f.begin(ctx, "ReadPorts", "", false); stop {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]drivers.PortState, len(ports))
	for i, p := range ports {
		st, ok := f.ports[p]
		if !ok {
			st = drivers.PortState{PortConfig: drivers.PortConfig{SwitchPort: p}}
		}
		out[i] = st
	}
	return out, nil
}
