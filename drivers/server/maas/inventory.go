package maas

import (
	"context"
	"net/http"
	"net/url"

	"github.com/slipway-dev/slipway/drivers"
)

// Status reads the machines of the nodes in ONE request (GET machines/
// with a repeated id filter) and answers them in the nodes' order; a node
// without a MachineID, or whose machine MAAS no longer has, gets a
// Machine with an empty MachineID. Only the machines' state, owner and
// tags are decoded (mMachineState): a poll of thousands of machines
// neither decodes nor keeps their interfaces and disks.
func (d *Driver) Status(ctx context.Context, nodes []drivers.NodeRef) ([]drivers.Machine, error) {
	if err := ctx.Err(); err != nil { // even when there is nothing to ask
		return nil, err
	}
	out := make([]drivers.Machine, len(nodes))
	p := url.Values{}
	for i, n := range nodes {
		out[i].Node = n.Name
		if n.MachineID != "" {
			p.Add("id", n.MachineID)
		}
	}
	if len(p) == 0 {
		return out, nil
	}
	since := d.c.cache.begin()
	var st []mMachineState
	if err := d.c.call(ctx, http.MethodGet, "machines/", "", p, &st); err != nil {
		return nil, err
	}
	ms := make([]mMachine, len(st))
	for i := range st {
		ms[i] = st[i].machine()
	}
	d.c.cache.putRead(since, ms, partInterfaces|partStorage)
	byID := make(map[string]*mMachine, len(ms))
	for i := range ms {
		byID[ms[i].SystemID] = &ms[i]
	}
	for i, n := range nodes {
		if m := byID[n.MachineID]; m != nil && n.MachineID != "" {
			out[i] = d.toMachine(m, n.Name)
		}
	}
	return out, nil
}

// Owned lists the machines allocated to this orchestrator (agent_name =
// instanceID), in one request.
func (d *Driver) Owned(ctx context.Context) ([]drivers.Machine, error) {
	var ms []mMachine
	if err := d.c.call(ctx, http.MethodGet, "machines/", "", url.Values{"agent_name": {d.instance}}, &ms); err != nil {
		return nil, err
	}
	out := make([]drivers.Machine, 0, len(ms))
	for i := range ms {
		m := d.toMachine(&ms[i], "")
		m.Owned = true
		out = append(out, m)
	}
	return out, nil
}
