package fake

import (
	"context"

	"github.com/slipway-dev/slipway/drivers"
)

// Network is a fake network driver recording the phase each node's ports
// were configured for.
type Network struct {
	core
	phases map[string]drivers.Phase // node name -> phase last configured
}

var _ drivers.Network = (*Network)(nil)

// NewNetwork returns a fake network driver following s.
func NewNetwork(s Script) *Network {
	return &Network{core: core{script: s}, phases: map[string]drivers.Phase{}}
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
	if phase != drivers.PhaseProvisioning && phase != drivers.PhaseProduction {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: unknown phase %q", phase)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.phases[n.Name] == phase {
		return drivers.Done("fake: ports of %s already configured for %s", n.Name, phase), nil
	}
	f.phases[n.Name] = phase
	return drivers.Done("fake: configured the %d ports of %s for %s", len(n.Interfaces), n.Name, phase), nil
}
