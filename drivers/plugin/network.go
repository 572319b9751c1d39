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

func (n *networkClient) Probe(ctx context.Context) (drivers.NetworkInfo, error) {
	return callOne[drivers.NetworkInfo](ctx, n.c.Probe)
}

func (n *networkClient) ConfigurePorts(ctx context.Context, node drivers.Node, phase drivers.Phase) (drivers.Result, error) {
	return callOne[drivers.Result](ctx, n.c.ConfigurePorts, node, phase)
}

// networkServer is the plugin's side.
type networkServer struct {
	pb.UnimplementedNetworkServer
	inst instance[drivers.Network]
}

func (s *networkServer) Configure(_ context.Context, req *pb.ConfigureRequest) (*pb.Reply, error) {
	return s.inst.configure(req)
}

func (s *networkServer) Probe(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	return s.inst.run(req, nil, func(d drivers.Network) ([]any, error) {
		info, err := d.Probe(ctx)
		return []any{info}, err
	})
}

func (s *networkServer) ConfigurePorts(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var node drivers.Node
	var phase drivers.Phase
	return s.inst.run(req, []any{&node, &phase}, func(d drivers.Network) ([]any, error) {
		r, err := d.ConfigurePorts(ctx, node, phase)
		return []any{r}, err
	})
}

var _ drivers.Network = (*networkClient)(nil)
