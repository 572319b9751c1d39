// Command slipway-driver-network-noop is the no-op network driver built as
// an external plugin: the worked example for plugin authors (see
// docs/drivers.md). Install it as <plugin-dir>/slipway-driver-network-<name>.
//
// It is not meant to be run by hand; the orchestrator starts it.
package main

import (
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/network/noop"
	"github.com/slipway-dev/slipway/drivers/plugin"
)

func main() {
	log := plugin.NewLogger("noop")
	plugin.Serve(plugin.Drivers{
		Network: func(cfg drivers.Config) (drivers.Network, error) {
			log.Info("noop network driver configured", "settings", len(cfg.Settings))
			return noop.New(cfg)
		},
	})
}
