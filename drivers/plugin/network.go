package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/slipway-dev/slipway/drivers"
	pb "github.com/slipway-dev/slipway/drivers/plugin/proto"
)

// maxReadPorts bounds the ports one ReadPorts call asks of a plugin.
const maxReadPorts = 4096

// networkClient is the orchestrator's side of a network driver plugin.
type networkClient struct {
	c pb.NetworkClient
	// reader: the plugin's driver reads ports back. Configure asks with
	// an empty ReadPorts; UNIMPLEMENTED (a driver that is no
	// drivers.NetworkReader, or a plugin built before the call) is no.
	reader bool
	// secrets are the Config's (the switch passwords): every answer of
	// the plugin is cleaned of them (a switch may echo a login).
	secrets []drivers.Secret
}

func (n *networkClient) configure(ctx context.Context, cfg drivers.Config) error {
	if err := invoke(ctx, n.c.Configure, configureRequest(cfg)); err != nil {
		return err
	}
	n.secrets = slices.Collect(maps.Values(cfg.Secrets))
	_, err := n.c.ReadPorts(ctx, &pb.Request{Args: []byte("[[]]")})
	n.reader = status.Code(err) != codes.Unimplemented
	return nil
}

// Reader is the client itself when the plugin's driver reads ports back.
func (n *networkClient) Reader() (drivers.NetworkReader, bool) {
	if !n.reader {
		return nil, false
	}
	return clientReader{n}, true
}

type clientReader struct{ n *networkClient }

func (r clientReader) ReadPorts(ctx context.Context, ports []drivers.SwitchPort) ([]drivers.PortState, error) {
	return r.n.readPorts(ctx, ports)
}

// readPorts reads the ports through the plugin.
func (n *networkClient) readPorts(ctx context.Context, ports []drivers.SwitchPort) ([]drivers.PortState, error) {
	if len(ports) > maxReadPorts {
		return nil, drivers.Errorf(drivers.Permanent, "read %d switch ports at once: at most %d per call", len(ports), maxReadPorts)
	}
	if !n.reader {
		return nil, drivers.Errorf(drivers.Permanent, "the network driver plugin does not read ports back")
	}
	st, err := callOne[[]drivers.PortState](ctx, n.c.ReadPorts, ports)
	return st, n.clean(err)
}

func (n *networkClient) Probe(ctx context.Context) (drivers.NetworkInfo, error) {
	info, err := callOne[drivers.NetworkInfo](ctx, n.c.Probe)
	return info, n.clean(err)
}

func (n *networkClient) ConfigurePorts(ctx context.Context, node drivers.Node, phase drivers.Phase) (drivers.Result, error) {
	res, err := callOne[drivers.Result](ctx, n.c.ConfigurePorts, node, phase)
	if len(n.secrets) > 0 {
		res.Message = drivers.RedactSecrets(res.Message, n.revealed()...)
	}
	return res, n.clean(err)
}

// clean is a plugin's error with the Config's secrets redacted.
func (n *networkClient) clean(err error) error {
	if err == nil || len(n.secrets) == 0 {
		return err
	}
	return redactErr(err, n.revealed()...)
}

func (n *networkClient) revealed() []string {
	out := make([]string, 0, len(n.secrets))
	for _, s := range n.secrets {
		out = append(out, s.Reveal())
	}
	return out
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

// ReadPorts answers UNIMPLEMENTED when the driver is no NetworkReader;
// an empty list is answered without asking the driver (Configure's
// question, networkClient.configure).
func (s *networkServer) ReadPorts(ctx context.Context, req *pb.Request) (*pb.Reply, error) {
	d, err := s.inst.get()
	if err != nil {
		return reply(err)
	}
	r, ok := drivers.ReaderOf(d)
	if !ok {
		return nil, status.Error(codes.Unimplemented, fmt.Sprintf("network driver %T does not read ports back", d))
	}
	var ports []drivers.SwitchPort
	return s.inst.run(req, []any{&ports}, func(drivers.Network) ([]any, error) {
		if len(ports) == 0 {
			return []any{[]drivers.PortState{}}, nil
		}
		if len(ports) > maxReadPorts {
			return nil, drivers.Errorf(drivers.Permanent, "read %d switch ports at once: at most %d per call", len(ports), maxReadPorts)
		}
		st, err := r.ReadPorts(ctx, ports)
		return []any{st}, err
	})
}

var (
	_ drivers.Network         = (*networkClient)(nil)
	_ drivers.ReaderUnwrapper = (*networkClient)(nil)
)
