package plugin

import (
	"context"
	"encoding/json"

	"github.com/slipway-dev/slipway/drivers"
	pb "github.com/slipway-dev/slipway/drivers/plugin/proto"
)

// oobClient is the orchestrator's side of an OOB driver plugin.
type oobClient struct{ c pb.OOBClient }

func (o *oobClient) configure(ctx context.Context, cfg drivers.Config) error {
	return invoke(ctx, o.c.Configure, configureRequest(cfg))
}

// oobCall sends the BMC (password in its own field) and further args.
func oobCall(ctx context.Context, rpc rpcFunc[*pb.OOBRequest], bmc drivers.BMC, args []any, results ...any) error {
	b, err := json.Marshal(bmc)
	if err != nil {
		return drivers.Errorf(drivers.Permanent, "plugin: encode BMC: %w", err)
	}
	a, err := encodeArgs(args...)
	if err != nil {
		return err
	}
	return invoke(ctx, rpc, &pb.OOBRequest{Bmc: b, Password: bmc.Password.Reveal(), Args: a}, results...)
}

func (o *oobClient) Probe(ctx context.Context, bmc drivers.BMC) (info drivers.BMCInfo, err error) {
	err = oobCall(ctx, o.c.Probe, bmc, nil, &info)
	return info, err
}

func (o *oobClient) PowerStatus(ctx context.Context, bmc drivers.BMC) (p drivers.PowerState, err error) {
	err = oobCall(ctx, o.c.PowerStatus, bmc, nil, &p)
	return p, err
}

func (o *oobClient) PowerOn(ctx context.Context, bmc drivers.BMC) (r drivers.Result, err error) {
	err = oobCall(ctx, o.c.PowerOn, bmc, nil, &r)
	return r, err
}

func (o *oobClient) PowerOff(ctx context.Context, bmc drivers.BMC) (r drivers.Result, err error) {
	err = oobCall(ctx, o.c.PowerOff, bmc, nil, &r)
	return r, err
}

func (o *oobClient) PowerCycle(ctx context.Context, bmc drivers.BMC) (r drivers.Result, err error) {
	err = oobCall(ctx, o.c.PowerCycle, bmc, nil, &r)
	return r, err
}

func (o *oobClient) SetBootDevice(ctx context.Context, bmc drivers.BMC, dev drivers.BootDevice) (r drivers.Result, err error) {
	err = oobCall(ctx, o.c.SetBootDevice, bmc, []any{dev}, &r)
	return r, err
}

// oobServer is the plugin's side.
type oobServer struct {
	pb.UnimplementedOOBServer
	factory func(drivers.Config) (drivers.OOB, error)
	inst    instance[drivers.OOB]
}

func (s *oobServer) Configure(_ context.Context, req *pb.ConfigureRequest) (*pb.Reply, error) {
	return s.inst.configure(s.factory, req)
}

// serveOOB decodes the BMC and the args, then runs f.
func (s *oobServer) serveOOB(req *pb.OOBRequest, ptrs []any, f func(d drivers.OOB, bmc drivers.BMC) ([]any, error)) (*pb.Reply, error) {
	d, err := s.inst.get()
	if err != nil {
		return reply(err)
	}
	var bmc drivers.BMC
	if err := json.Unmarshal(req.GetBmc(), &bmc); err != nil {
		return badRequest(err)
	}
	bmc.Password = drivers.NewSecret(req.GetPassword())
	return serve(req.GetArgs(), ptrs, func() ([]any, error) { return f(d, bmc) })
}

func (s *oobServer) Probe(ctx context.Context, req *pb.OOBRequest) (*pb.Reply, error) {
	return s.serveOOB(req, nil, func(d drivers.OOB, bmc drivers.BMC) ([]any, error) {
		info, err := d.Probe(ctx, bmc)
		return []any{info}, err
	})
}

func (s *oobServer) PowerStatus(ctx context.Context, req *pb.OOBRequest) (*pb.Reply, error) {
	return s.serveOOB(req, nil, func(d drivers.OOB, bmc drivers.BMC) ([]any, error) {
		p, err := d.PowerStatus(ctx, bmc)
		return []any{p}, err
	})
}

func (s *oobServer) PowerOn(ctx context.Context, req *pb.OOBRequest) (*pb.Reply, error) {
	return s.serveOOB(req, nil, func(d drivers.OOB, bmc drivers.BMC) ([]any, error) {
		r, err := d.PowerOn(ctx, bmc)
		return []any{r}, err
	})
}

func (s *oobServer) PowerOff(ctx context.Context, req *pb.OOBRequest) (*pb.Reply, error) {
	return s.serveOOB(req, nil, func(d drivers.OOB, bmc drivers.BMC) ([]any, error) {
		r, err := d.PowerOff(ctx, bmc)
		return []any{r}, err
	})
}

func (s *oobServer) PowerCycle(ctx context.Context, req *pb.OOBRequest) (*pb.Reply, error) {
	return s.serveOOB(req, nil, func(d drivers.OOB, bmc drivers.BMC) ([]any, error) {
		r, err := d.PowerCycle(ctx, bmc)
		return []any{r}, err
	})
}

func (s *oobServer) SetBootDevice(ctx context.Context, req *pb.OOBRequest) (*pb.Reply, error) {
	var dev drivers.BootDevice
	return s.serveOOB(req, []any{&dev}, func(d drivers.OOB, bmc drivers.BMC) ([]any, error) {
		r, err := d.SetBootDevice(ctx, bmc, dev)
		return []any{r}, err
	})
}

var _ drivers.OOB = (*oobClient)(nil)
