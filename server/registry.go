package server

import (
	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/drivers/network/gnmi"
	"github.com/slipway-dev/slipway/drivers/network/noop"
	"github.com/slipway-dev/slipway/drivers/network/ovs"
	"github.com/slipway-dev/slipway/drivers/oob/ipmi"
	"github.com/slipway-dev/slipway/drivers/oob/redfish"
	"github.com/slipway-dev/slipway/drivers/registry"
	"github.com/slipway-dev/slipway/drivers/server/maas"
)

// DefaultPluginDir is where external drivers live unless the
// configuration's pluginDir (--plugin-dir, SLIPWAY_PLUGIN_DIR) says
// otherwise.
const DefaultPluginDir = "/usr/local/lib/slipway/drivers"

// Builtins wires the drivers compiled into the orchestrator. Explicit, no
// init() registration: this map is the whole list.
func Builtins() registry.Builtins {
	return registry.Builtins{
		OOB:    map[string]registry.OOBFactory{ipmi.Name: ipmi.New, redfish.Name: redfish.New},
		Server: map[string]registry.ServerFactory{maas.Name: maas.New},
		Network: map[string]registry.NetworkFactory{
			noop.Name: noop.New,
			gnmi.Name: gnmi.New,
			ovs.Name:  ovs.New,
		},
	}
}

// Registry finds the drivers: the built-ins and the plugins in dir, pinned
// by SHA-256 where pins say (file name -> hex). The caller closes it.
func Registry(dir string, pins map[string]string, log zerolog.Logger) (*registry.Registry, error) {
	return registry.New(Builtins(), registry.Options{PluginDir: dir, Pins: pins, Log: log})
}

// registry is Registry with o's log.
func (o Options) registry(dir string, pins map[string]string) (*registry.Registry, error) {
	return Registry(dir, pins, o.Log)
}
