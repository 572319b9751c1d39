package plugin

import (
	"context"

	"github.com/slipway-dev/slipway/drivers"
	pb "github.com/slipway-dev/slipway/drivers/plugin/proto"
)

// serverClient is the orchestrator's side of a server driver plugin.
type serverClient struct{ c pb.ServerClient }

func (s *serverClient) configure(ctx context.Context, cfg drivers.Config) error {
	return invoke(ctx, s.c.Configure, configureRequest(cfg))
}

func (s *serverClient) ProbeSite(ctx context.Context) (drivers.SiteInfo, error) {
	return callOne[drivers.SiteInfo](ctx, s.c.ProbeSite)
}

func (s *serverClient) PrepareSite(ctx context.Context, site drivers.SiteSpec) (drivers.Result, error) {
	return callOne[drivers.Result](ctx, s.c.PrepareSite, site)
}

func (s *serverClient) IdentifyNode(ctx context.Context, n drivers.Node) (m drivers.Machine, r drivers.Result, err error) {
	err = callSecrets(ctx, s.c.IdentifyNode, []any{n}, nodeSecrets(n), &m, &r)
	return m, r, err
}

func (s *serverClient) Commission(ctx context.Context, n drivers.NodeRef) (drivers.Result, error) {
	return callOne[drivers.Result](ctx, s.c.Commission, n)
}

func (s *serverClient) ApplyNetworking(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return callOne[drivers.Result](ctx, s.c.ApplyNetworking, n)
}

func (s *serverClient) ApplyStorage(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return callOne[drivers.Result](ctx, s.c.ApplyStorage, n)
}

func (s *serverClient) ApplyPlatform(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return callOne[drivers.Result](ctx, s.c.ApplyPlatform, n)
}

func (s *serverClient) Deploy(ctx context.Context, n drivers.Node, d drivers.Deployment) (drivers.Result, error) {
	return callOne[drivers.Result](ctx, s.c.Deploy, n, d)
}

func (s *serverClient) Inventory(ctx context.Context, n drivers.Node) (drivers.Inventory, error) {
	return callOne[drivers.Inventory](ctx, s.c.Inventory, n)
}

func (s *serverClient) Release(ctx context.Context, n drivers.NodeRef, erase drivers.Erase) (drivers.Result, error) {
	return callOne[drivers.Result](ctx, s.c.Release, n, erase)
}

func (s *serverClient) Status(ctx context.Context, nodes []drivers.NodeRef) ([]drivers.Machine, error) {
	return callOne[[]drivers.Machine](ctx, s.c.Status, nodes)
}

func (s *serverClient) Owned(ctx context.Context) ([]drivers.Machine, error) {
	return callOne[[]drivers.Machine](ctx, s.c.Owned)
}

func (s *serverClient) Recover(ctx context.Context, n drivers.NodeRef, a drivers.Recovery) (drivers.Result, error) {
	return callOne[drivers.Result](ctx, s.c.Recover, n, a)
}

// serverServer is the plugin's side.
type serverServer struct {
	pb.UnimplementedServerServer
	inst instance[drivers.Server]
}

func (s *serverServer) Configure(_ context.Context, req *pb.ConfigureRequest) (*pb.Reply, error) {
	return s.inst.configure(req)
}

// result adapts a (Result, error) step to instance.run's shape.
func result(r drivers.Result, err error) ([]any, error) { return []any{r}, err }

func (s *serverServer) ProbeSite(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	return s.inst.run(req, nil, func(d drivers.Server) ([]any, error) {
		info, err := d.ProbeSite(ctx)
		return []any{info}, err
	})
}

func (s *serverServer) PrepareSite(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var site drivers.SiteSpec
	return s.inst.run(req, []any{&site}, func(d drivers.Server) ([]any, error) { return result(d.PrepareSite(ctx, site)) })
}

func (s *serverServer) IdentifyNode(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	return s.inst.run(req, []any{&n}, func(d drivers.Server) ([]any, error) {
		restoreNodeSecrets(&n, req.GetSecrets())
		m, r, err := d.IdentifyNode(ctx, n)
		return []any{m, r}, err
	})
}

func (s *serverServer) Commission(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.NodeRef
	return s.inst.run(req, []any{&n}, func(d drivers.Server) ([]any, error) { return result(d.Commission(ctx, n)) })
}

func (s *serverServer) ApplyNetworking(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	return s.inst.run(req, []any{&n}, func(d drivers.Server) ([]any, error) { return result(d.ApplyNetworking(ctx, n)) })
}

func (s *serverServer) ApplyStorage(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	return s.inst.run(req, []any{&n}, func(d drivers.Server) ([]any, error) { return result(d.ApplyStorage(ctx, n)) })
}

func (s *serverServer) ApplyPlatform(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	return s.inst.run(req, []any{&n}, func(d drivers.Server) ([]any, error) { return result(d.ApplyPlatform(ctx, n)) })
}

func (s *serverServer) Deploy(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	var dep drivers.Deployment
	return s.inst.run(req, []any{&n, &dep}, func(d drivers.Server) ([]any, error) { return result(d.Deploy(ctx, n, dep)) })
}

func (s *serverServer) Release(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.NodeRef
	var erase drivers.Erase
	return s.inst.run(req, []any{&n, &erase}, func(d drivers.Server) ([]any, error) { return result(d.Release(ctx, n, erase)) })
}

func (s *serverServer) Status(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var nodes []drivers.NodeRef
	return s.inst.run(req, []any{&nodes}, func(d drivers.Server) ([]any, error) {
		ms, err := d.Status(ctx, nodes)
		return []any{ms}, err
	})
}

func (s *serverServer) Owned(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	return s.inst.run(req, nil, func(d drivers.Server) ([]any, error) {
		ms, err := d.Owned(ctx)
		return []any{ms}, err
	})
}

func (s *serverServer) Recover(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.NodeRef
	var a drivers.Recovery
	return s.inst.run(req, []any{&n, &a}, func(d drivers.Server) ([]any, error) { return result(d.Recover(ctx, n, a)) })
}

func (s *serverServer) Inventory(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	return s.inst.run(req, []any{&n}, func(d drivers.Server) ([]any, error) {
		inv, err := d.Inventory(ctx, n)
		return []any{inv}, err
	})
}

var _ drivers.Server = (*serverClient)(nil)
