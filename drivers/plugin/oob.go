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
	err = invoke(ctx, rpc, &pb.OOBRequest{Bmc: b, Password: bmc.Password.Reveal(), Args: a}, results...)
	if pw := bmc.Password.Reveal(); err != nil && pw != "" {
		return redactErr(err, pw, bmc.Username+":"+pw) // a plugin's error may quote what its BMC echoed
	}
	return err
}

// oobOne is oobCall for an RPC that answers one result.
func oobOne[R any](ctx context.Context, rpc rpcFunc[*pb.OOBRequest], bmc drivers.BMC, args []any) (R, error) {
	var r R
	err := oobCall(ctx, rpc, bmc, args, &r)
	return r, err
}

func (o *oobClient) Probe(ctx context.Context, bmc drivers.BMC) (drivers.BMCInfo, error) {
	return oobOne[drivers.BMCInfo](ctx, o.c.Probe, bmc, nil)
}

func (o *oobClient) PowerStatus(ctx context.Context, bmc drivers.BMC) (drivers.PowerState, error) {
	return oobOne[drivers.PowerState](ctx, o.c.PowerStatus, bmc, nil)
}

func (o *oobClient) PowerOn(ctx context.Context, bmc drivers.BMC) (drivers.Result, error) {
	return oobOne[drivers.Result](ctx, o.c.PowerOn, bmc, nil)
}

func (o *oobClient) PowerOff(ctx context.Context, bmc drivers.BMC) (drivers.Result, error) {
	return oobOne[drivers.Result](ctx, o.c.PowerOff, bmc, nil)
}

func (o *oobClient) PowerCycle(ctx context.Context, bmc drivers.BMC) (drivers.Result, error) {
	return oobOne[drivers.Result](ctx, o.c.PowerCycle, bmc, nil)
}

func (o *oobClient) SetBootDevice(ctx context.Context, bmc drivers.BMC, dev drivers.BootDevice) (drivers.Result, error) {
	return oobOne[drivers.Result](ctx, o.c.SetBootDevice, bmc, []any{dev})
}

// oobServer is the plugin's side.
type oobServer struct {
	pb.UnimplementedOOBServer
	inst instance[drivers.OOB]
}

func (s *oobServer) Configure(_ context.Context, req *pb.ConfigureRequest) (*pb.Reply, error) {
	return s.inst.configure(req)
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
