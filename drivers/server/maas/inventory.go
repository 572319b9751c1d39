package maas

import (
	"context"
	"net/url"

	"github.com/slipway-dev/slipway/drivers"
)

// Status reads the machines of the nodes in ONE request (GET machines/
// with a repeated id filter) and answers them in the nodes' order; a node
// without a MachineID, or whose machine MAAS no longer has, gets a
// Machine with an empty MachineID. Only the machines' state, owner and
// tags are decoded (mMachineState): a poll of thousands of machines
// neither decodes nor keeps their interfaces and disks, but for the
// machines that are Ready, which the inventory reads next
// (status_read.go). The kernel
// parameters of deployed machines come from their kernel tag, read in
// the (cached) tag list (kernelOptions).
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
	st, err := list[statusRead](ctx, d.c, "machines/", p)
	if err != nil {
		return nil, err
	}
	ms := make([]mMachine, len(st))
	for i := range st {
		ms[i] = st[i].machine()
	}
	d.c.cache.putRead(since, ms, partInterfaces|partStorage)
	d.c.cache.keepReady(since, st) // the inventory's read (status_read.go)
	byID := make(map[string]*mMachine, len(ms))
	for i := range ms {
		byID[ms[i].SystemID] = &ms[i]
	}
	src := make([]*mMachine, len(nodes))
	for i, n := range nodes {
		if m := byID[n.MachineID]; m != nil && n.MachineID != "" {
			out[i], src[i] = d.toMachine(m, n.Name), m
		}
	}
	if err := d.kernelOptions(ctx, out, src); err != nil {
		return nil, err
	}
	return out, nil
}

// Owned lists the machines allocated to this orchestrator (agent_name =
// instanceID), in one request decoded as it is read, each machine's
// state only (as Status): a site's every machine, tens of KB each, is
// never held whole.
func (d *Driver) Owned(ctx context.Context) ([]drivers.Machine, error) {
	st, err := list[mMachineState](ctx, d.c, "machines/", url.Values{"agent_name": {d.instance}})
	if err != nil {
		return nil, err
	}
	ms := make([]mMachine, len(st))
	for i := range st {
		ms[i] = st[i].machine()
	}
	out := make([]drivers.Machine, 0, len(ms))
	src := make([]*mMachine, 0, len(ms))
	for i := range ms {
		m := d.toMachine(&ms[i], "")
		m.Owned = true
		if m.OwnerNode == "" { // allocated to us, its marker not (yet) set
			m.OwnerNode = ms[i].OwnerData[OwnerDataNode]
		}
		out, src = append(out, m), append(src, &ms[i])
	}
	if err := d.kernelOptions(ctx, out, src); err != nil {
		return nil, err
	}
	return out, nil
}
