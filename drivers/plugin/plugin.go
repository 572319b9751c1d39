package plugin

import (
	"context"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
	"github.com/slipway-dev/slipway/drivers"
	pb "github.com/slipway-dev/slipway/drivers/plugin/proto"
	"google.golang.org/grpc"
)

// ProtocolVersion is the version of the plugin protocol this build speaks.
// A plugin built against another version is refused at start with a
// message naming both.
const ProtocolVersion = 4 // 2: server drivers gained Inventory; 3: Release takes an erase policy (a string, was a bool); 4: the drivers types' JSON names are snake_case

// Handshake is the go-plugin handshake: the magic cookie keeps a plugin
// binary started by hand from waiting for a client forever.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "SLIPWAY_DRIVER_PLUGIN",
	MagicCookieValue: "7d0e3c1b-slipway-driver",
}

// configurer is what each kind's client does before its first call.
type configurer interface {
	configure(ctx context.Context, cfg drivers.Config) error
}

// oobPlugin, serverPlugin and networkPlugin are the go-plugin adapters of
// the three kinds. On the plugin side they carry the driver's factory.
type oobPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	factory func(drivers.Config) (drivers.OOB, error)
}

func (p *oobPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterOOBServer(s, &oobServer{inst: instance[drivers.OOB]{factory: p.factory}})
	return nil
}

func (p *oobPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &oobClient{c: pb.NewOOBClient(c)}, nil
}

type serverPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	factory func(drivers.Config) (drivers.Server, error)
}

func (p *serverPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterServerServer(s, &serverServer{inst: instance[drivers.Server]{factory: p.factory}})
	return nil
}

func (p *serverPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &serverClient{c: pb.NewServerClient(c)}, nil
}

type networkPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	factory func(drivers.Config) (drivers.Network, error)
}

func (p *networkPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterNetworkServer(s, &networkServer{inst: instance[drivers.Network]{factory: p.factory}})
	return nil
}

func (p *networkPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &networkClient{c: pb.NewNetworkClient(c)}, nil
}

// Drivers is what a plugin binary serves: the factory of one or more kinds.
type Drivers struct {
	OOB     func(drivers.Config) (drivers.OOB, error)
	Server  func(drivers.Config) (drivers.Server, error)
	Network func(drivers.Config) (drivers.Network, error)
}

// pluginSet returns the go-plugin plugin map of the kinds d serves.
func (d Drivers) pluginSet() goplugin.PluginSet {
	set := goplugin.PluginSet{}
	if d.OOB != nil {
		set[drivers.KindOOB] = &oobPlugin{factory: d.OOB}
	}
	if d.Server != nil {
		set[drivers.KindServer] = &serverPlugin{factory: d.Server}
	}
	if d.Network != nil {
		set[drivers.KindNetwork] = &networkPlugin{factory: d.Network}
	}
	return set
}

// clientSet is the plugin map the orchestrator dispenses from.
func clientSet() goplugin.PluginSet {
	return goplugin.PluginSet{
		drivers.KindOOB:     &oobPlugin{},
		drivers.KindServer:  &serverPlugin{},
		drivers.KindNetwork: &networkPlugin{},
	}
}

// Serve is the whole main of a driver plugin: it serves d over gRPC to the
// orchestrator that started the process, and returns when it is told to
// stop. The process exits when that orchestrator dies, however it dies
// (lifetime.go). Log to stderr (one JSON object per line, with "@level" and
// "@message", as hclog writes them) and the lines land in the
// orchestrator's log.
func Serve(d Drivers) {
	set := d.pluginSet()
	if len(set) == 0 {
		panic(fmt.Sprintf("plugin.Serve: no driver given (protocol %d)", ProtocolVersion))
	}
	bindToHost()
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         set,
		GRPCServer:      goplugin.DefaultGRPCServer,
	})
}
