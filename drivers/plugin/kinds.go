package plugin

import (
	"context"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// Network is an external network driver.
type Network struct{ *External }

// Probe implements drivers.Network.
func (n Network) Probe(ctx context.Context) (drivers.NetworkInfo, error) {
	return use(ctx, n.External, func(c *networkClient) (drivers.NetworkInfo, error) { return c.Probe(ctx) })
}

// ConfigurePorts implements drivers.Network.
func (n Network) ConfigurePorts(ctx context.Context, node drivers.Node, p drivers.Phase) (drivers.Result, error) {
	return use(ctx, n.External, func(c *networkClient) (drivers.Result, error) { return c.ConfigurePorts(ctx, node, p) })
}

// readerProbe bounds starting the plugin to learn whether it reads
// ports back (Reader has no context of its own).
const readerProbe = 30 * time.Second

// Reader is the plugin's read-back side when its driver has one
// (drivers.ReaderOf): the plugin is started if it is not running.
func (n Network) Reader() (drivers.NetworkReader, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), readerProbe)
	defer cancel()
	reads, err := use(ctx, n.External, func(c *networkClient) (bool, error) { return c.reader, nil })
	if err != nil || !reads {
		return nil, false
	}
	return networkReader(n), true
}

// networkReader reads ports through the plugin.
type networkReader Network

// ReadPorts implements drivers.NetworkReader.
func (r networkReader) ReadPorts(ctx context.Context, ports []drivers.SwitchPort) ([]drivers.PortState, error) {
	return use(ctx, r.External, func(c *networkClient) ([]drivers.PortState, error) { return c.readPorts(ctx, ports) })
}

// OOB is an external out-of-band driver.
type OOB struct{ *External }

// Probe implements drivers.OOB.
func (o OOB) Probe(ctx context.Context, b drivers.BMC) (drivers.BMCInfo, error) {
	return use(ctx, o.External, func(c *oobClient) (drivers.BMCInfo, error) { return c.Probe(ctx, b) })
}

// PowerStatus implements drivers.OOB.
func (o OOB) PowerStatus(ctx context.Context, b drivers.BMC) (drivers.PowerState, error) {
	return use(ctx, o.External, func(c *oobClient) (drivers.PowerState, error) { return c.PowerStatus(ctx, b) })
}

// PowerOn implements drivers.OOB.
func (o OOB) PowerOn(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	return use(ctx, o.External, func(c *oobClient) (drivers.Result, error) { return c.PowerOn(ctx, b) })
}

// PowerOff implements drivers.OOB.
func (o OOB) PowerOff(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	return use(ctx, o.External, func(c *oobClient) (drivers.Result, error) { return c.PowerOff(ctx, b) })
}

// PowerCycle implements drivers.OOB.
func (o OOB) PowerCycle(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	return use(ctx, o.External, func(c *oobClient) (drivers.Result, error) { return c.PowerCycle(ctx, b) })
}

// SetBootDevice implements drivers.OOB.
func (o OOB) SetBootDevice(ctx context.Context, b drivers.BMC, d drivers.BootDevice) (drivers.Result, error) {
	return use(ctx, o.External, func(c *oobClient) (drivers.Result, error) { return c.SetBootDevice(ctx, b, d) })
}

// Server is an external server provisioning driver.
type Server struct{ *External }

// ProbeSite implements drivers.Server.
func (s Server) ProbeSite(ctx context.Context) (drivers.SiteInfo, error) {
	return use(ctx, s.External, func(c *serverClient) (drivers.SiteInfo, error) { return c.ProbeSite(ctx) })
}

// PrepareSite implements drivers.Server.
func (s Server) PrepareSite(ctx context.Context, site drivers.SiteSpec) (drivers.Result, error) {
	return use(ctx, s.External, func(c *serverClient) (drivers.Result, error) { return c.PrepareSite(ctx, site) })
}

// IdentifyNode implements drivers.Server.
func (s Server) IdentifyNode(ctx context.Context, n drivers.Node) (drivers.Machine, drivers.Result, error) {
	var m drivers.Machine
	r, err := use(ctx, s.External, func(c *serverClient) (drivers.Result, error) {
		var r drivers.Result
		var err error
		m, r, err = c.IdentifyNode(ctx, n)
		return r, err
	})
	return m, r, err
}

// Commission implements drivers.Server.
func (s Server) Commission(ctx context.Context, n drivers.NodeRef) (drivers.Result, error) {
	return use(ctx, s.External, func(c *serverClient) (drivers.Result, error) { return c.Commission(ctx, n) })
}

// ApplyNetworking implements drivers.Server.
func (s Server) ApplyNetworking(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return use(ctx, s.External, func(c *serverClient) (drivers.Result, error) { return c.ApplyNetworking(ctx, n) })
}

// ApplyStorage implements drivers.Server.
func (s Server) ApplyStorage(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return use(ctx, s.External, func(c *serverClient) (drivers.Result, error) { return c.ApplyStorage(ctx, n) })
}

// ApplyPlatform implements drivers.Server.
func (s Server) ApplyPlatform(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return use(ctx, s.External, func(c *serverClient) (drivers.Result, error) { return c.ApplyPlatform(ctx, n) })
}

// Deploy implements drivers.Server.
func (s Server) Deploy(ctx context.Context, n drivers.Node, d drivers.Deployment) (drivers.Result, error) {
	return use(ctx, s.External, func(c *serverClient) (drivers.Result, error) { return c.Deploy(ctx, n, d) })
}

// Release implements drivers.Server.
func (s Server) Release(ctx context.Context, n drivers.NodeRef, erase drivers.Erase) (drivers.Result, error) {
	return use(ctx, s.External, func(c *serverClient) (drivers.Result, error) { return c.Release(ctx, n, erase) })
}

// Status implements drivers.Server.
func (s Server) Status(ctx context.Context, nodes []drivers.NodeRef) ([]drivers.Machine, error) {
	return use(ctx, s.External, func(c *serverClient) ([]drivers.Machine, error) { return c.Status(ctx, nodes) })
}

// Owned implements drivers.Server.
func (s Server) Owned(ctx context.Context) ([]drivers.Machine, error) {
	return use(ctx, s.External, func(c *serverClient) ([]drivers.Machine, error) { return c.Owned(ctx) })
}

// Inventory implements drivers.Server.
func (s Server) Inventory(ctx context.Context, n drivers.Node) (drivers.Inventory, error) {
	return use(ctx, s.External, func(c *serverClient) (drivers.Inventory, error) { return c.Inventory(ctx, n) })
}

// Recover implements drivers.Server.
func (s Server) Recover(ctx context.Context, n drivers.NodeRef, a drivers.Recovery) (drivers.Result, error) {
	return use(ctx, s.External, func(c *serverClient) (drivers.Result, error) { return c.Recover(ctx, n, a) })
}

var (
	_ drivers.Network         = Network{}
	_ drivers.ReaderUnwrapper = Network{}
	_ drivers.NetworkReader   = networkReader{}
	_ drivers.OOB             = OOB{}
	_ drivers.Server          = Server{}
)
