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
	blocked := func(method string) { log.Info("fake: call blocked until its context ends", "method", method) }
	plugin.Serve(plugin.Drivers{
		OOB:     scripted(blocked, func(s fake.Script) drivers.OOB { return fake.NewOOB(s) }),
		Server:  scripted(blocked, func(s fake.Script) drivers.Server { return fake.NewServer(s) }),
		Network: scripted(blocked, func(s fake.Script) drivers.Network { return fake.NewNetwork(s) }),
	})
}

// scripted is a factory of the fake that build makes from the driver's
// settings (fake.ScriptFromConfig), its Block waits told to onBlock (the
// plugin's log, so a test knows a call is inside).
func scripted[T any](onBlock func(string), build func(fake.Script) T) func(drivers.Config) (T, error) {
	return func(cfg drivers.Config) (T, error) {
		s, err := fake.ScriptFromConfig(cfg)
		if err != nil {
			var none T
			return none, err
		}
		s.OnBlock = onBlock
		return build(s), nil
	}
}
