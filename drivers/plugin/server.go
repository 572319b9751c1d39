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

func (s *serverClient) ProbeSite(ctx context.Context) (info drivers.SiteInfo, err error) {
	err = call(ctx, s.c.ProbeSite, nil, &info)
	return info, err
}

func (s *serverClient) PrepareSite(ctx context.Context, site drivers.SiteSpec) (r drivers.Result, err error) {
	err = call(ctx, s.c.PrepareSite, []any{site}, &r)
	return r, err
}

func (s *serverClient) IdentifyNode(ctx context.Context, n drivers.Node) (m drivers.Machine, r drivers.Result, err error) {
	err = callSecrets(ctx, s.c.IdentifyNode, []any{n}, nodeSecrets(n), &m, &r)
	return m, r, err
}

func (s *serverClient) Commission(ctx context.Context, n drivers.NodeRef) (r drivers.Result, err error) {
	err = call(ctx, s.c.Commission, []any{n}, &r)
	return r, err
}

func (s *serverClient) ApplyNetworking(ctx context.Context, n drivers.Node) (r drivers.Result, err error) {
	err = call(ctx, s.c.ApplyNetworking, []any{n}, &r)
	return r, err
}

func (s *serverClient) ApplyStorage(ctx context.Context, n drivers.Node) (r drivers.Result, err error) {
	err = call(ctx, s.c.ApplyStorage, []any{n}, &r)
	return r, err
}

func (s *serverClient) ApplyPlatform(ctx context.Context, n drivers.Node) (r drivers.Result, err error) {
	err = call(ctx, s.c.ApplyPlatform, []any{n}, &r)
	return r, err
}

func (s *serverClient) Deploy(ctx context.Context, n drivers.Node, d drivers.Deployment) (r drivers.Result, err error) {
	err = call(ctx, s.c.Deploy, []any{n, d}, &r)
	return r, err
}

func (s *serverClient) Inventory(ctx context.Context, n drivers.Node) (inv drivers.Inventory, err error) {
	err = call(ctx, s.c.Inventory, []any{n}, &inv)
	return inv, err
}

func (s *serverClient) Release(ctx context.Context, n drivers.NodeRef, erase drivers.Erase) (r drivers.Result, err error) {
	err = call(ctx, s.c.Release, []any{n, erase}, &r)
	return r, err
}

func (s *serverClient) Status(ctx context.Context, nodes []drivers.NodeRef) (ms []drivers.Machine, err error) {
	err = call(ctx, s.c.Status, []any{nodes}, &ms)
	return ms, err
}

func (s *serverClient) Owned(ctx context.Context) (ms []drivers.Machine, err error) {
	err = call(ctx, s.c.Owned, nil, &ms)
	return ms, err
}

func (s *serverClient) Recover(ctx context.Context, n drivers.NodeRef, a drivers.Recovery) (r drivers.Result, err error) {
	err = call(ctx, s.c.Recover, []any{n, a}, &r)
	return r, err
}

// serverServer is the plugin's side.
type serverServer struct {
	pb.UnimplementedServerServer
	factory func(drivers.Config) (drivers.Server, error)
	inst    instance[drivers.Server]
}

func (s *serverServer) Configure(_ context.Context, req *pb.ConfigureRequest) (*pb.Reply, error) {
	return s.inst.configure(s.factory, req)
}

// run decodes the args into ptrs and runs f on the configured driver.
func (s *serverServer) run(req *pb.Request, ptrs []any, f func(d drivers.Server) ([]any, error)) (*pb.Reply, error) {
	d, err := s.inst.get()
	if err != nil {
		return reply(err)
	}
	return serve(req.GetArgs(), ptrs, func() ([]any, error) { return f(d) })
}

// result adapts a (Result, error) step to run's shape.
func result(r drivers.Result, err error) ([]any, error) { return []any{r}, err }

func (s *serverServer) ProbeSite(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	return s.run(req, nil, func(d drivers.Server) ([]any, error) {
		info, err := d.ProbeSite(ctx)
		return []any{info}, err
	})
}

func (s *serverServer) PrepareSite(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var site drivers.SiteSpec
	return s.run(req, []any{&site}, func(d drivers.Server) ([]any, error) { return result(d.PrepareSite(ctx, site)) })
}

func (s *serverServer) IdentifyNode(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	return s.run(req, []any{&n}, func(d drivers.Server) ([]any, error) {
		restoreNodeSecrets(&n, req.GetSecrets())
		m, r, err := d.IdentifyNode(ctx, n)
		return []any{m, r}, err
	})
}

func (s *serverServer) Commission(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.NodeRef
	return s.run(req, []any{&n}, func(d drivers.Server) ([]any, error) { return result(d.Commission(ctx, n)) })
}

func (s *serverServer) ApplyNetworking(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	return s.run(req, []any{&n}, func(d drivers.Server) ([]any, error) { return result(d.ApplyNetworking(ctx, n)) })
}

func (s *serverServer) ApplyStorage(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	return s.run(req, []any{&n}, func(d drivers.Server) ([]any, error) { return result(d.ApplyStorage(ctx, n)) })
}

func (s *serverServer) ApplyPlatform(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	return s.run(req, []any{&n}, func(d drivers.Server) ([]any, error) { return result(d.ApplyPlatform(ctx, n)) })
}

func (s *serverServer) Deploy(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	var dep drivers.Deployment
	return s.run(req, []any{&n, &dep}, func(d drivers.Server) ([]any, error) { return result(d.Deploy(ctx, n, dep)) })
}

func (s *serverServer) Release(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.NodeRef
	var erase drivers.Erase
	return s.run(req, []any{&n, &erase}, func(d drivers.Server) ([]any, error) { return result(d.Release(ctx, n, erase)) })
}

func (s *serverServer) Status(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var nodes []drivers.NodeRef
	return s.run(req, []any{&nodes}, func(d drivers.Server) ([]any, error) {
		ms, err := d.Status(ctx, nodes)
		return []any{ms}, err
	})
}

func (s *serverServer) Owned(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	return s.run(req, nil, func(d drivers.Server) ([]any, error) {
		ms, err := d.Owned(ctx)
		return []any{ms}, err
	})
}

func (s *serverServer) Recover(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.NodeRef
	var a drivers.Recovery
	return s.run(req, []any{&n, &a}, func(d drivers.Server) ([]any, error) { return result(d.Recover(ctx, n, a)) })
}

func (s *serverServer) Inventory(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	var n drivers.Node
	return s.run(req, []any{&n}, func(d drivers.Server) ([]any, error) {
		inv, err := d.Inventory(ctx, n)
		return []any{inv}, err
	})
}

var _ drivers.Server = (*serverClient)(nil)
