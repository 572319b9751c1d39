// Package noop is the built-in network driver that configures nothing and
// says so: for sites whose switch ports are managed elsewhere. It is also
// built as an external plugin (cmd/slipway-driver-network-noop), the worked
// example for plugin authors.
package noop

import (
	"context"
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// Name is the driver's registry name.
const Name = "noop"

// Driver is the no-op network driver.
type Driver struct{}

// New returns the driver; it takes no configuration.
func New(drivers.Config) (drivers.Network, error) { return Driver{}, nil }

// Probe always succeeds: there is nothing to reach.
func (Driver) Probe(ctx context.Context) (drivers.NetworkInfo, error) {
	if err := ctx.Err(); err != nil {
		return drivers.NetworkInfo{}, err
	}
	return drivers.NetworkInfo{Reachable: true, Description: "noop: switch ports are not managed by Slipway"}, nil
}

// ConfigurePorts configures nothing and reports which ports it left alone.
func (Driver) ConfigurePorts(ctx context.Context, n drivers.Node, phase drivers.Phase) (drivers.Result, error) {
	if err := ctx.Err(); err != nil {
		return drivers.Result{}, err
	}
	if !drivers.KnownPhase(phase) {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "noop: unknown phase %q", phase)
	}
	plan, err := drivers.PortPlan(n, phase)
	if err != nil {
		return drivers.Result{}, err
	}
	names := make([]string, 0, len(plan))
	for _, p := range plan {
		names = append(names, p.String())
	}
	return drivers.Done("noop: left the %s ports of %s (%s) unconfigured; configure the switches outside Slipway",
		phase, n.Name, orNone(strings.Join(names, ", "))), nil
}

func orNone(s string) string {
	if s == "" {
		return "none cabled in the design"
	}
	return s
}

var _ drivers.Network = Driver{}

// String names the driver.
func (Driver) String() string { return fmt.Sprintf("network driver %q (built in)", Name) }
