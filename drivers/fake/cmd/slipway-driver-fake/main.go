// Command slipway-driver-fake serves the scriptable fake drivers of package
// drivers/fake as an external plugin, for every kind: install it as
// slipway-driver-<kind>-fake and script it with the driver's settings
// (failAt, failClass, failResult, failTimes, polls, block). For testing the
// orchestrator against failures; never for real hardware.
package main

import (
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/drivers/plugin"
)

func main() {
	log := plugin.NewLogger("fake")
	script := func(cfg drivers.Config) (fake.Script, error) {
		s, err := fake.ScriptFromConfig(cfg)
		s.OnBlock = func(method string) { log.Info("fake: call blocked until its context ends", "method", method) }
		return s, err
	}
	plugin.Serve(plugin.Drivers{
		OOB: func(cfg drivers.Config) (drivers.OOB, error) {
			s, err := script(cfg)
			if err != nil {
				return nil, err
			}
			return fake.NewOOB(s), nil
		},
		Server: func(cfg drivers.Config) (drivers.Server, error) {
			s, err := script(cfg)
			if err != nil {
				return nil, err
			}
			return fake.NewServer(s), nil
		},
		Network: func(cfg drivers.Config) (drivers.Network, error) {
			s, err := script(cfg)
			if err != nil {
				return nil, err
			}
			return fake.NewNetwork(s), nil
		},
	})
}
