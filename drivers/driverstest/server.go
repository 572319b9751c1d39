package driverstest

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// Names the server suite uses for things that must not exist.
const (
	UnknownNode      = "conformance-no-such-node"
	UnknownMachineID = "conformance-no-such-machine"
	UnknownRecovery  = drivers.Recovery("conformance-not-an-action")
)

// RunServer runs the server conformance suite. open returns a driver that
// can identify (find or enlist) node; it is called once per subtest. The
// suite takes the node through its whole lifecycle (with the recovery
// actions rescue, exit-rescue and test on the deployed machine) and
// leaves it released (with erase) and Ready. Delete is not run: the
// other subtests identify the same machine.
//
// Subtests: ProbeSite, PrepareSite, Lifecycle, UnknownMachine, Concurrent,
// Planner (a drivers.ServerPlanner only), CancelledContext,
// ExpiredDeadline, CancelDuringCall.
func RunServer(t *testing.T, open func(t *testing.T) drivers.Server, node drivers.Node) {
	t.Helper()
	runServer(realT{t}, func(h tb) drivers.Server { return open(testingT(h)) }, node)
}

func runServer(h tb, open func(tb) drivers.Server, node drivers.Node) {
	h.Run("ProbeSite", func(h tb) { serverProbeSite(h, open, node) })
	h.Run("PrepareSite", func(h tb) { serverPrepareSite(h, open, node) })
	h.Run("Lifecycle", func(h tb) { serverLifecycle(h, open, node) })
	h.Run("UnknownMachine", func(h tb) { serverUnknownMachine(h, open, node) })
	h.Run("Concurrent", func(h tb) { serverConcurrent(h, open, node) })
	h.Run("Planner", func(h tb) { serverPlanner(h, open, node) })
	runContextChecks(h, func(h tb) ([]ctxCall, []string) {
		return serverCtxCalls(open(h), node), nil
	})
}

// serverProbeSite: the driver reaches and authenticates.
func serverProbeSite(h tb, open func(tb) drivers.Server, node drivers.Node) {
	d := open(h)
	c := newChecker(h)
	ctx, cancel := ctxFor()
	defer cancel()
	info, err := d.ProbeSite(ctx)
	c.checkErr("ProbeSite", err)
	if err != nil || !info.Reachable || !info.Authenticated {
		h.Errorf("ProbeSite: %+v, %v; want reachable and authenticated", info, err)
	}
}

// serverPrepareSite: the driver prepares an empty site, Done when asked
// again.
func serverPrepareSite(h tb, open func(tb) drivers.Server, node drivers.Node) {
	d := open(h)
	c := newChecker(h)
	prepare := func(ctx context.Context) (drivers.Result, error) { return d.PrepareSite(ctx, drivers.SiteSpec{}) }
	c.mustPoll("PrepareSite(empty)", prepare)
	c.done("PrepareSite(empty) after Done", prepare)
}

// serverLifecycle: the driver takes the node from identify to deployed,
// through recovery, to released.
func serverLifecycle(h tb, open func(tb) drivers.Server, node drivers.Node) {
	d := open(h)
	c := newChecker(h)
	m := c.mustIdentify(d, node)
	id := m.MachineID
	h.Logf("node %s is machine %s (%s)", node.Name, id, m.State)

	again := func(what string, n drivers.Node) {
		var m2 drivers.Machine
		if c.done(what, func(ctx context.Context) (r drivers.Result, err error) {
			m2, r, err = d.IdentifyNode(ctx, n)
			return r, err
		}) && m2.MachineID != id {
			h.Errorf("%s: MachineID %q, want %q: IdentifyNode must find the same machine", what, m2.MachineID, id)
		}
	}
	again("IdentifyNode after Done", node)
	n := node
	n.MachineID = id
	ref := n.NodeRef
	again("IdentifyNode with the MachineID", n)

	c.mustPoll("Commission", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, ref) })
	c.inventory(d, n)
	c.mustPoll("ApplyNetworking", func(ctx context.Context) (drivers.Result, error) { return d.ApplyNetworking(ctx, n) })
	c.mustPoll("ApplyStorage", func(ctx context.Context) (drivers.Result, error) { return d.ApplyStorage(ctx, n) })
	c.mustPoll("ApplyPlatform", func(ctx context.Context) (drivers.Result, error) { return d.ApplyPlatform(ctx, n) })
	deploy := func(ctx context.Context) (drivers.Result, error) {
		return d.Deploy(ctx, n, drivers.Deployment{UserData: []byte("#cloud-config\n{}\n")})
	}
	c.mustPoll("Deploy", deploy)
	c.done("Deploy after Done", deploy)

	c.statusAndOwned(d, node.Name, ref, id)

	c.recoveries(d, ref)
	c.mustPoll("Deploy after recovery", deploy)

	release := func(ctx context.Context) (drivers.Result, error) { return d.Release(ctx, ref, drivers.EraseDefault) }
	c.mustPoll("Release(erase)", release)
	c.done("Release(erase) after Done", release)

	rctx, rcancel := ctxFor()
	defer rcancel()
	r, err := d.Recover(rctx, ref, UnknownRecovery)
	c.fails("Recover with an action that does not apply", r, err)
}

// serverUnknownMachine: the driver fails the steps of a machine it does
// not have.
func serverUnknownMachine(h tb, open func(tb) drivers.Server, node drivers.Node) {
	d := open(h)
	c := newChecker(h)
	ctx, cancel := ctxFor()
	defer cancel()
	r, err := d.Commission(ctx, drivers.NodeRef{Name: node.Name, MachineID: UnknownMachineID})
	c.fails("Commission of an unknown MachineID", r, err)
	unknown := node
	unknown.MachineID = UnknownMachineID
	_, err = d.Inventory(ctx, unknown)
	c.fails("Inventory of an unknown MachineID", drivers.Result{}, err)
}

// serverConcurrent: the driver serves concurrent calls for one node and
// finds one machine.
func serverConcurrent(h tb, open func(tb) drivers.Server, node drivers.Node) {
	d := open(h)
	c := newChecker(h)
	ids := make([]string, concurrency)
	concurrently(concurrency, func(i int) {
		if m, ok := c.identify(d, node); ok {
			ids[i] = m.MachineID
		}
		ctx, cancel := ctxFor()
		defer cancel()
		if _, err := d.ProbeSite(ctx); err != nil {
			c.checkErr("concurrent ProbeSite", err)
			h.Errorf("concurrent ProbeSite: %v", err)
		}
		if ms, err := d.Status(ctx, []drivers.NodeRef{node.NodeRef}); err != nil || len(ms) != 1 {
			c.checkErr("concurrent Status", err)
			h.Errorf("concurrent Status: %d machines, %v", len(ms), err)
		}
		if _, err := d.Owned(ctx); err != nil {
			c.checkErr("concurrent Owned", err)
			h.Errorf("concurrent Owned: %v", err)
		}
	})
	for i, id := range ids {
		if id != ids[0] {
			h.Errorf("concurrent IdentifyNode: goroutine %d got machine %q, goroutine 0 %q: want one machine", i, id, ids[0])
		}
	}
}

// serverCtxCalls are the calls of the context checks.
func serverCtxCalls(d drivers.Server, n drivers.Node) []ctxCall {
	ref := n.NodeRef
	return []ctxCall{
		{name: "ProbeSite", readOnly: true, call: func(ctx context.Context) (drivers.Result, error) {
			_, err := d.ProbeSite(ctx)
			return noResult(err)
		}},
		{name: "Status", readOnly: true, call: func(ctx context.Context) (drivers.Result, error) {
			_, err := d.Status(ctx, []drivers.NodeRef{ref})
			return noResult(err)
		}},
		{name: "Owned", readOnly: true, call: func(ctx context.Context) (drivers.Result, error) {
			_, err := d.Owned(ctx)
			return noResult(err)
		}},
		{name: "Inventory", readOnly: true, call: func(ctx context.Context) (drivers.Result, error) {
			_, err := d.Inventory(ctx, n)
			return noResult(err)
		}},
		{name: "PrepareSite", call: func(ctx context.Context) (drivers.Result, error) { return d.PrepareSite(ctx, drivers.SiteSpec{}) }},
		{name: "IdentifyNode", call: func(ctx context.Context) (drivers.Result, error) {
			_, r, err := d.IdentifyNode(ctx, n)
			return r, err
		}},
		{name: "Commission", call: func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, ref) }},
		{name: "ApplyNetworking", call: func(ctx context.Context) (drivers.Result, error) { return d.ApplyNetworking(ctx, n) }},
		{name: "ApplyStorage", call: func(ctx context.Context) (drivers.Result, error) { return d.ApplyStorage(ctx, n) }},
		{name: "ApplyPlatform", call: func(ctx context.Context) (drivers.Result, error) { return d.ApplyPlatform(ctx, n) }},
		{name: "Deploy", call: func(ctx context.Context) (drivers.Result, error) { return d.Deploy(ctx, n, drivers.Deployment{}) }},
		{name: "Recover", call: func(ctx context.Context) (drivers.Result, error) { return d.Recover(ctx, ref, drivers.RecoveryAbort) }},
		{name: "Release", call: func(ctx context.Context) (drivers.Result, error) { return d.Release(ctx, ref, drivers.EraseNone) }},
	}
}

// identify polls IdentifyNode until Done and returns the machine, which
// must have an ID. Safe from any goroutine.
func (c *checker) identify(d drivers.Server, n drivers.Node) (drivers.Machine, bool) {
	c.h.Helper()
	var m drivers.Machine
	ok := c.poll("IdentifyNode", func(ctx context.Context) (r drivers.Result, err error) {
		m, r, err = d.IdentifyNode(ctx, n)
		return r, err
	})
	if ok && m.MachineID == "" {
		c.h.Errorf("IdentifyNode: Done with %+v, want a MachineID", m)
		ok = false
	}
	return m, ok
}

func (c *checker) mustIdentify(d drivers.Server, n drivers.Node) drivers.Machine {
	c.h.Helper()
	m, ok := c.identify(d, n)
	if !ok {
		c.h.FailNow()
	}
	return m
}

// macRE is the form of an inventory's MAC addresses.
var macRE = regexp.MustCompile(`^[0-9a-f]{2}(:[0-9a-f]{2}){5}$`)

// inventory checks Inventory of a commissioned node: its machine, and a
// NIC with a well-formed MAC (lower case, unique) for every device alias
// of the node's interfaces.
func (c *checker) inventory(d drivers.Server, n drivers.Node) {
	h := c.h
	ctx, cancel := ctxFor()
	defer cancel()
	inv, err := d.Inventory(ctx, n)
	c.checkErr("Inventory", err)
	if err != nil {
		h.Errorf("Inventory of commissioned node %s: %v", n.Name, err)
		return
	}
	if inv.MachineID != n.MachineID {
		h.Errorf("Inventory: machine %q, want %q", inv.MachineID, n.MachineID)
	}
	c.inventoryNICs(inv, n)
	c.inventoryFacts(inv)
}

// statusAndOwned checks Status of the node (machine id) beside an unknown
// node, and that Owned lists the machine.
func (c *checker) statusAndOwned(d drivers.Server, name string, ref drivers.NodeRef, id string) {
	h := c.h
	ctx, cancel := ctxFor()
	defer cancel()
	ms, err := d.Status(ctx, []drivers.NodeRef{ref, {Name: UnknownNode}})
	c.checkErr("Status", err)
	switch {
	case err != nil:
		h.Errorf("Status: %v", err)
	case len(ms) != 2:
		h.Errorf("Status of 2 nodes: %d machines, want one per node in order", len(ms))
	default:
		if ms[0].MachineID != id || ms[0].State == "" {
			h.Errorf("Status of %s: %+v, want machine %s with a state", name, ms[0], id)
		}
		if ms[1].MachineID != "" {
			h.Errorf("Status of an unknown node: %+v, want an empty MachineID", ms[1])
		}
	}

	owned, err := d.Owned(ctx)
	c.checkErr("Owned", err)
	if err != nil {
		h.Errorf("Owned: %v", err)
	}
	if !slices.ContainsFunc(owned, func(m drivers.Machine) bool { return m.MachineID == id }) {
		h.Errorf("Owned: %d machines without %s, want the deployed machine", len(owned), id)
	}
	for _, m := range owned {
		if m.MachineID == "" || !m.Owned {
			h.Errorf("Owned lists %+v: want a MachineID and Owned true", m)
		}
	}
}

// recoveries runs the recovery actions on the deployed machine: each
// reaches its goal by polling and is Done when asked again.
func (c *checker) recoveries(d drivers.Server, ref drivers.NodeRef) {
	for _, a := range []drivers.Recovery{drivers.RecoveryRescue, drivers.RecoveryExitRescue, drivers.RecoveryTest} {
		act := func(ctx context.Context) (drivers.Result, error) { return d.Recover(ctx, ref, a) }
		c.mustPoll("Recover("+string(a)+")", act)
		c.done("Recover("+string(a)+") after Done", act)
	}
	c.done("Recover(exit-rescue) out of rescue mode", func(ctx context.Context) (drivers.Result, error) {
		return d.Recover(ctx, ref, drivers.RecoveryExitRescue)
	})
}

// inventoryNICs checks the inventory's NICs: a kernel name and a unique,
// lower-case MAC each, and one for every device alias of the node's
// interfaces.
func (c *checker) inventoryNICs(inv drivers.Inventory, n drivers.Node) {
	h := c.h
	macs := map[string]string{}
	for _, nic := range inv.NICs {
		if !macRE.MatchString(nic.MAC) || nic.Name == "" {
			h.Errorf("Inventory: NIC %+v: want a kernel name and a lower-case MAC like 0c:c4:7a:00:00:01", nic)
		}
		if prev, dup := macs[nic.MAC]; dup {
			h.Errorf("Inventory: NICs %s and %s share MAC %s", prev, nic.Name, nic.MAC)
		}
		macs[nic.MAC] = nic.Name
	}
	for _, in := range n.Interfaces {
		for _, dev := range in.Devices {
			if _, ok := inv.NIC(dev.Alias); !ok {
				h.Errorf("Inventory: no NIC for device %s of interface %s", dev.Alias, in.Name)
			}
		}
	}
}

// inventoryFacts checks the hardware facts commissioning reports: every
// machine has CPUs, memory and a disk; GPUs only some.
func (c *checker) inventoryFacts(inv drivers.Inventory) {
	h := c.h
	if inv.CPU.Threads <= 0 || inv.MemoryMiB <= 0 {
		h.Errorf("Inventory: CPU %+v, %d MiB of memory: want the logical CPUs and the memory commissioning found", inv.CPU, inv.MemoryMiB)
	}
	if inv.CPU.Cores > inv.CPU.Threads || inv.CPU.Sockets > max(inv.CPU.Cores, 1) {
		h.Errorf("Inventory: CPU %+v: sockets <= cores <= threads", inv.CPU)
	}
	if inv.System.Vendor == "" && inv.System.Product == "" {
		h.Errorf("Inventory: system %+v: want the DMI vendor or product", inv.System)
	}
	if len(inv.Disks) == 0 {
		h.Errorf("Inventory: no disks")
	}
	for _, d := range inv.Disks {
		if d.Name == "" || d.SizeBytes <= 0 {
			h.Errorf("Inventory: disk %+v: want a kernel name and a size", d)
		}
	}
	for _, g := range inv.GPUs {
		if g.Address == "" || g.NUMANode < 0 {
			h.Errorf("Inventory: GPU %+v: want a PCI address and a NUMA node", g)
		}
	}
}

// serverPlanner: a driver that plans answers one plan per node, in
// order: a node without a machine, or with one the provisioner does not
// know, is not found; no nodes, no plans; an empty site plans. A driver
// that does not plan is not asked.
func serverPlanner(h tb, open func(tb) drivers.Server, node drivers.Node) {
	p, ok := open(h).(drivers.ServerPlanner)
	if !ok {
		return
	}
	c := newChecker(h)
	ctx, cancel := ctxFor()
	defer cancel()
	none, unknown := node, node
	none.MachineID, none.Name = "", node.Name+"-new"
	unknown.MachineID = UnknownMachineID
	ps, err := p.PlanNodes(ctx, []drivers.Node{none, unknown})
	c.checkErr("PlanNodes", err)
	if err != nil || len(ps) != 2 || ps[0].Node != none.Name || ps[1].Node != unknown.Name || ps[0].Found || ps[1].Found {
		h.Errorf("PlanNodes of a node without a machine and one with an unknown machine: %+v, %v; want two plans, in order, not found", ps, err)
	}
	if ps, err := p.PlanNodes(ctx, nil); err != nil || len(ps) != 0 {
		h.Errorf("PlanNodes(no nodes): %+v, %v", ps, err)
	}
	_, err = p.PlanSite(ctx, drivers.SiteSpec{})
	c.checkErr("PlanSite(empty)", err)
	if err != nil {
		h.Errorf("PlanSite(empty): %v", err)
	}
}
