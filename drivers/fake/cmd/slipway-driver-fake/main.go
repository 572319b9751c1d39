// Command slipway-driver-fake serves the scriptable fake drivers of package
// drivers/fake as an external plugin, for every kind: install it as
// slipway-driver-<kind>-fake and script it with the driver's settings
// (failAt, failClass, failResult, failTimes, polls, block). For testing the
// orchestrator against failures; never for real hardware.
package main

import (
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/drivers/plugin"
)

func main() {
	plugin.Serve(plugin.Drivers{OOB: fake.OOBFactory, Server: fake.ServerFactory, Network: fake.NetworkFactory})
}
