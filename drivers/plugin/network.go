package plugin

import (
	"context"

	"github.com/slipway-dev/slipway/drivers"
	pb "github.com/slipway-dev/slipway/drivers/plugin/proto"
)

// networkClient is the orchestrator's side of a network driver plugin.
type networkClient struct{ c pb.NetworkClient }

func (n *networkClient) configure(ctx context.Context, cfg drivers.Config) error {
	return invoke(ctx, n.c.Configure, configureRequest(cfg))
}

func (n *networkClient) Probe(ctx context.Context) (info drivers.NetworkInfo, err error) {
	err = call(ctx, n.c.Probe, nil, &info)
	return info, err
}

func (n *networkClient) ConfigurePorts(ctx context.Context, node drivers.Node, phase drivers.Phase) (r drivers.Result, err error) {
	err = call(ctx, n.c.ConfigurePorts, []any{node, phase}, &r)
	return r, err
}

// networkServer is the plugin's side.
type networkServer struct {
	pb.UnimplementedNetworkServer
	factory func(drivers.Config) (drivers.Network, error)
	inst    instance[drivers.Network]
}

func (s *networkServer) Configure(_ context.Context, req *pb.ConfigureRequest) (*pb.Reply, error) {
	return s.inst.configure(s.factory, req)
}

func (s *networkServer) Probe(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	d, err := s.inst.get()
	if err != nil {
		return reply(err)
	}
	return serve(req.GetArgs(), nil, func() ([]any, error) {
		info, err := d.Probe(ctx)
		return []any{info}, err
	})
}

func (s *networkServer) ConfigurePorts(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	d, err := s.inst.get()
	if err != nil {
		return reply(err)
	}
	var node drivers.Node
	var phase drivers.Phase
	return serve(req.GetArgs(), []any{&node, &phase}, func() ([]any, error) {
		r, err := d.ConfigurePorts(ctx, node, phase)
		return []any{r}, err
	})
}

var _ drivers.Network = (*networkClient)(nil)
