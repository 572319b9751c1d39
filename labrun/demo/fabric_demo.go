package demo

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// NewNetwork builds the network driver the demo's fabric configures (the
// ovs driver's New) from a Config carrying the switches' endpoints.
type NewNetwork func(drivers.Config) (drivers.Network, error)

// fabricRun is the demo's fabric while the demo runs: the Open vSwitch
// it started, the network driver on it and the design's nodes.
type fabricRun struct {
	f       *ovsFabric
	dir     string
	net     drivers.Network
	nodes   []drivers.Node
	byName  map[string]drivers.Node
	destroy string // the node destroyed at the end ("" none)
}

// pingParallel bounds the pings in flight. (64 at once left pairs
// unreached within the 5 s on a loaded 2-core machine: the switches'
// ovs-vswitchd and ping compete for the CPU.)
const pingParallel = 16

// startFabric starts the design's fabric in Open vSwitch (nil when the
// design declares no switches, or o.NoFabric) and points the design's
// switch addresses at it.
func (o *Options) startFabric(ctx context.Context, d *design.Design) (*fabricRun, error) {
	switches := d.AllSwitches()
	if len(switches) == 0 || o.NoFabric {
		return nil, nil
	}
	if o.NewNetwork == nil {
		return nil, fmt.Errorf("the design declares a switch fabric but the demo was given no network driver for it")
	}
	names := make([]string, len(switches))
	for i, s := range switches {
		names[i] = s.Name
	}
	r := &fabricRun{byName: map[string]drivers.Node{}}
	for _, name := range d.NodeNames() {
		n := driverspec.Node(d, d.Nodes[name], "")
		r.nodes = append(r.nodes, n)
		r.byName[name] = n
	}
	dir, err := os.MkdirTemp("", "swf") // short: the sockets' paths are bounded
	if err != nil {
		return nil, err
	}
	r.dir = dir
	if r.f, err = startFabric(ctx, dir, names, r.nodes); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	eps := r.f.Endpoints()
	if r.net, err = o.NewNetwork(driverspec.NetworkConfig(drivers.Config{}, eps)); err != nil {
		r.Close()
		return nil, fmt.Errorf("the demo's network driver: %w", err)
	}
	pointAt(d, eps)
	if o.Show {
		var where []string
		for _, e := range eps {
			where = append(where, e.Name+" "+e.Address)
		}
		fmt.Fprintf(o.Out, "switch fabric: one Open vSwitch per switch (%s), trunked to each other (%s); %d nodes' NICs cabled by veth as the design says, their ports configured by the %s network driver\n",
			strings.Join(where, ", "), strings.Join(r.f.trunks, " "), len(r.nodes), "ovs")
	}
	return r, nil
}

// pointAt sets the design's switch addresses to the endpoints' (the
// design the demo stores and applies says where its switches are).
func pointAt(d *design.Design, eps []drivers.SwitchEndpoint) {
	for _, s := range d.Sites {
		for name, sw := range s.Spec.Fabric.Switches {
			for _, e := range eps {
				if e.Name == name {
					sw.Address, sw.Username, sw.Password = e.Address, "", ""
					sw.Settings = e.Settings
					s.Spec.Fabric.Switches[name] = sw
				}
			}
		}
	}
}

// Close stops the fabric's Open vSwitch and removes its directory.
func (r *fabricRun) Close() {
	if r == nil {
		return
	}
	_ = r.f.Close()
	os.RemoveAll(r.dir)
}

// Network is the driver on the fabric (nil: no fabric).
func (r *fabricRun) Network() drivers.Network {
	if r == nil {
		return nil
	}
	return r.net
}

// measure waits for the nodes' LACP bonds, measures the connectivity
// of the nodes the lab deployed (not those in notDeployed), then
// destroys the last deployed node with the engine and reads its ports
// back with ovs-vsctl.
func (r *fabricRun) measure(ctx context.Context, e *orchestrator.Engine, revision string, notDeployed []string) (*Connectivity, error) {
	deployed := func(n string) bool { return !slices.Contains(notDeployed, n) }
	r.waitLACP(ctx, 30*time.Second)
	c, err := measureConnectivity(ctx, r.f, r.nodes, deployed, pingParallel)
	if err != nil {
		return nil, err
	}
	for i := len(r.nodes) - 1; i >= 0 && r.destroy == ""; i-- {
		if deployed(r.nodes[i].Name) && r.nodes[i].Fabric != nil {
			r.destroy = r.nodes[i].Name
		}
	}
	if r.destroy != "" {
		if c.Quarantine, err = r.destroyOne(ctx, e, revision); err != nil {
			return nil, err
		}
	}
	c.judge()
	if r.destroy != "" && len(c.Quarantine) == 0 {
		c.Pass = false
	}
	return &c, nil
}

// waitLACP waits (at most limit) until every LACP bond of the nodes'
// side has negotiated with its switch (ovs-appctl lacp/show).
func (r *fabricRun) waitLACP(ctx context.Context, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for ctx.Err() == nil {
		out, err := r.f.hosts.Appctl(ctx, "ovs-vswitchd", "lacp/show")
		if err == nil && strings.Count(out, "status:") == strings.Count(out, "negotiated") {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// destroyOne destroys r.destroy with the engine and reads its ports.
func (r *fabricRun) destroyOne(ctx context.Context, e *orchestrator.Engine, revision string) ([]QuarantinedPort, error) {
	task, err := e.Submit(ctx, record.Request{Action: record.ActionDestroyNodes, Revision: revision, Requester: "demo",
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{r.destroy}}}}})
	if err != nil {
		return nil, fmt.Errorf("destroy %s: %w", r.destroy, err)
	}
	if task, err = e.Wait(ctx, task.ID); err != nil {
		return nil, fmt.Errorf("destroy %s: %w", r.destroy, err)
	}
	if task.Status != record.TaskSucceeded {
		return nil, fmt.Errorf("destroy %s: %s: %s", r.destroy, task.Status, task.Message)
	}
	n := r.byName[r.destroy]
	var out []QuarantinedPort
	for _, in := range n.Interfaces {
		for _, d := range in.Devices {
			if d.Switch == "" || d.Port == "" {
				continue
			}
			q := QuarantinedPort{Node: n.Name, Switch: d.Switch, Port: d.Port, Want: n.Fabric.QuarantineVLAN}
			vlan, trunk, found, err := r.f.portVLAN(ctx, drivers.SwitchPort{Switch: d.Switch, Port: d.Port})
			if err != nil {
				return nil, fmt.Errorf("read %s:%s with ovs-vsctl: %w", d.Switch, d.Port, err)
			}
			q.VLAN, q.Trunk = vlan, trunk
			q.OK = found && vlan == q.Want && len(trunk) == 0
			out = append(out, q)
		}
	}
	return out, nil
}
