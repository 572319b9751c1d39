package ovs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/slipway-dev/slipway/drivers"
)

// ConfigurePorts sets node n's ports as drivers.PortPlan says for phase:
// one transaction per switch, none for a switch whose ports already are
// as planned. A port the bridge does not have is a Permanent error
// naming the switch, the port and the node; a switch that does not
// answer is a Transient one naming the switch and its address.
func (d *Driver) ConfigurePorts(ctx context.Context, n drivers.Node, phase drivers.Phase) (drivers.Result, error) {
	if err := ctx.Err(); err != nil {
		return drivers.Result{}, err
	}
	plan, err := drivers.PortPlan(n, phase)
	if err != nil {
		return drivers.Result{}, err
	}
	if err := checkPlan(plan); err != nil {
		return drivers.Result{}, err
	}
	for _, p := range plan {
		if _, err := d.sw(p.SwitchPort, n.Name); err != nil {
			return drivers.Result{}, err
		}
	}
	var done []string
	for _, g := range drivers.GroupBySwitch(plan) {
		changed, err := d.configureSwitch(ctx, d.switches[g.Switch], n.Name, g.Ports)
		if err != nil {
			return drivers.Result{}, err
		}
		done = append(done, fmt.Sprintf("%s: %d ports, %d changes", g.Switch, len(g.Ports), changed))
	}
	if len(done) == 0 {
		return drivers.Done("ovs: node %s has no cabled port to configure for %s", n.Name, phase), nil
	}
	return drivers.Done("ovs: node %s ports set for %s (%s)", n.Name, phase, strings.Join(done, "; ")), nil
}

// checkPlan refuses what no OVS port can be: a VLAN outside 1..4094 (0
// untags, 4095 is reserved) or an MTU outside 68..65535.
func checkPlan(plan []drivers.PortConfig) error {
	for _, p := range plan {
		for _, v := range p.VLANs() {
			if v < 1 || v >= blackholeVLAN {
				return drivers.Errorf(drivers.Permanent, "ovs: node %s port %s: VLAN %d cannot be carried (1 to 4094); fix the design's VLAN",
					p.Node, p.SwitchPort, v)
			}
		}
		if p.MTU != 0 && (p.MTU < 68 || p.MTU > 65535) {
			return drivers.Errorf(drivers.Permanent, "ovs: node %s port %s: MTU %d is outside 68..65535; fix the design's MTU", p.Node, p.SwitchPort, p.MTU)
		}
	}
	return nil
}

// maxAttempts bounds the transactions of one switch in one call: a
// transaction is tried again when the bridge's ports changed between
// the read and the write (another writer).
const maxAttempts = 3

// configureSwitch brings the node's ports of one switch to ports and
// returns how many columns and rows it changed, once ovs-vswitchd
// applied them (and any change committed before, still pending).
func (d *Driver) configureSwitch(ctx context.Context, sc switchConf, node string, ports []drivers.PortConfig) (int, error) {
	cl, changes, next, err := d.commitSwitch(ctx, d.conn(sc.addr), sc, node, ports)
	if err != nil || next == 0 {
		return changes, err
	}
	return changes, waitApplied(ctx, cl, sc, next)
}

// commitSwitch reads, decides and writes under the connection's lock
// (the wait for ovs-vswitchd is outside it, so that calls for other
// nodes commit meanwhile and ovs-vswitchd applies them together). next
// is the configuration to wait for (0: none pending).
func (d *Driver) commitSwitch(ctx context.Context, c *conn, sc switchConf, node string, ports []drivers.PortConfig) (client.Client, int, int, error) {
	if err := c.lock(ctx); err != nil {
		return nil, 0, 0, err
	}
	defer c.unlock()
	names := make([]string, len(ports))
	for i, p := range ports {
		names[i] = p.Port
	}
	for attempt := 1; ; attempt++ {
		cl, snap, err := d.snapshot(ctx, c, sc, names)
		if err != nil {
			return nil, 0, 0, err
		}
		ops, changes, err := planOps(cl, snap, node, ports)
		if err != nil {
			return nil, 0, 0, classified(err, sc, node)
		}
		if len(ops) == 0 {
			if snap.root.CurCfg < snap.root.NextCfg {
				return cl, 0, snap.root.NextCfg, nil
			}
			return cl, 0, 0, nil
		}
		next, err := commit(ctx, cl, snap, ops)
		switch {
		case err == nil:
			return cl, changes, next, nil
		case ctx.Err() != nil:
			return nil, 0, 0, ctx.Err()
		case isTxError(err) && attempt < maxAttempts:
			continue // the bridge changed since it was read: read again
		case isTxError(err) && strings.Contains(err.Error(), "constraint violation"):
			return nil, 0, 0, nameTaken(sc, node, ports, err)
		case isTxError(err):
			return nil, 0, 0, drivers.Errorf(drivers.Transient, "ovs: switch %s refused the ports of node %s: %v; retry", sc.name, node, err)
		}
		c.drop()
		return nil, 0, 0, unreachable(sc, err)
	}
}

// nameTaken is the error of a transaction that still violated the
// Port name index on its last try: the bridge has a Port under the name
// of the node's bond (NODE/LAG) that does not hold the bond's members
// (read again each try: another writer making the same bond would have
// been seen holding them), an operator's or another's; the driver does
// not take it over.
func nameTaken(sc switchConf, node string, ports []drivers.PortConfig, err error) error {
	var bonds []string
	for _, w := range wants(node, ports) {
		if len(w.members) > 1 {
			bonds = append(bonds, w.name)
		}
	}
	if len(bonds) == 0 {
		return drivers.Errorf(drivers.Permanent, "ovs: switch %s refused the ports of node %s: %v", sc.name, node, err)
	}
	return drivers.Errorf(drivers.Permanent,
		"ovs: switch %s already has a port named %s, which does not hold node %s's bond members (made by hand or by another): "+
			"remove or rename it (ovs-vsctl del-port %s), then retry",
		sc.name, strings.Join(bonds, " or "), node, bonds[0])
}

// classified is err with a class: an unclassified one (libovsdb refused
// an operation the driver built) is Permanent, naming the switch and node.
func classified(err error, sc switchConf, node string) error {
	var de *drivers.Error
	if errors.As(err, &de) {
		return err
	}
	return drivers.Errorf(drivers.Permanent, "ovs: switch %s: building the change of node %s's ports: %v (a driver defect: report it)", sc.name, node, err)
}

// commit runs ops with a check that each Port read as holding a planned
// interface still holds exactly what it did (another writer that
// regrouped them makes the transaction fail, and the caller read
// again) and a raise of next_cfg, whose new value it returns.
func commit(ctx context.Context, cl client.Client, snap *snapshot, ops []ovsdb.Operation) (int, error) {
	zero := 0
	var all []ovsdb.Operation
	for _, u := range slices.Sorted(maps.Keys(snap.ports)) {
		p := snap.ports[u]
		m := &port{UUID: p.UUID, Interfaces: p.Interfaces}
		wait, err := cl.Where(&port{UUID: p.UUID}).Wait(ovsdb.WaitConditionEqual, &zero, m, &m.Interfaces)
		if err != nil {
			return 0, err
		}
		all = append(all, wait...)
	}
	all = append(all, ops...)
	all = append(all,
		ovsdb.Operation{Op: ovsdb.OperationMutate, Table: tableRoot,
			Where:     []ovsdb.Condition{ovsdb.NewCondition("_uuid", ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: snap.root.UUID})},
			Mutations: []ovsdb.Mutation{*ovsdb.NewMutation("next_cfg", ovsdb.MutateOperationAdd, 1)}},
		ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tableRoot, Where: []ovsdb.Condition{}, Columns: []string{"next_cfg"}})
	res, err := transact(ctx, cl, all)
	if err != nil {
		return 0, err
	}
	rows := res[len(res)-1].Rows
	if len(rows) != 1 {
		return 0, fmt.Errorf("reading next_cfg: %d rows", len(rows))
	}
	next, ok := rows[0]["next_cfg"].(int)
	if !ok {
		if f, isFloat := rows[0]["next_cfg"].(float64); isFloat {
			return int(f), nil
		}
		return 0, fmt.Errorf("next_cfg is %T", rows[0]["next_cfg"])
	}
	return next, nil
}

// waitApplied waits until ovs-vswitchd applied the configuration next
// (cur_cfg reaches it), polling every 20 ms, bounded by applyTimeout.
func waitApplied(ctx context.Context, cl client.Client, sc switchConf, next int) error {
	ctx, cancel := context.WithTimeout(ctx, applyTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	cur := -1
	for {
		res, err := transact(ctx, cl, []ovsdb.Operation{{Op: ovsdb.OperationSelect, Table: tableRoot, Where: []ovsdb.Condition{},
			Columns: []string{"cur_cfg"}}})
		if err == nil && len(res) == 1 && len(res[0].Rows) == 1 {
			cur = toInt(res[0].Rows[0]["cur_cfg"])
			if cur >= next {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return drivers.Errorf(drivers.Transient,
				"ovs: switch %s (OVSDB %s) stored the change but ovs-vswitchd did not apply it in time (cur_cfg %d, next_cfg %d): check that ovs-vswitchd runs (its log), then retry",
				sc.name, sc.addr, cur, next)
		case <-tick.C:
		}
	}
}

func toInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case float64:
		return int(x)
	}
	return -1
}

// want is one OVS Port the plan asks for: a plain port (one member, its
// name the design port's) or a LAG's bond.
type want struct {
	name    string
	members []string // design port names: Interface names
	cfg     drivers.PortConfig
}

// lagPortName is the OVS Port of node's LAG on a switch: the LAG's name
// is the node interface's, the same on every node, so the node names it.
func lagPortName(node, lag string) string { return node + "/" + lag }

// wants groups ports into OVS Ports: a LAG with two or more members on
// this switch is one bond; a LAG with one member here stays a plain
// port (marked with its LAG).
func wants(node string, ports []drivers.PortConfig) []want {
	count := map[string]int{}
	for _, p := range ports {
		if p.LAG != "" {
			count[p.LAG]++
		}
	}
	var out []want
	at := map[string]int{}
	for _, p := range ports {
		if p.LAG == "" || count[p.LAG] < 2 {
			out = append(out, want{name: p.Port, members: []string{p.Port}, cfg: p})
			continue
		}
		if i, ok := at[p.LAG]; ok {
			out[i].members = append(out[i].members, p.Port)
			continue
		}
		at[p.LAG] = len(out)
		out = append(out, want{name: lagPortName(node, p.LAG), members: []string{p.Port}, cfg: p})
	}
	return out
}

// planOps are the operations bringing snap's ports to what ports say,
// and the number of changes; none when they already are.
func planOps(cl client.Client, snap *snapshot, node string, ports []drivers.PortConfig) ([]ovsdb.Operation, int, error) {
	ours := map[string]bool{}
	for _, p := range ports {
		if snap.byName[p.Port] == nil {
			return nil, 0, drivers.Errorf(drivers.Permanent,
				"ovs: switch %s has no port %s on bridge %s (node %s, NIC %s): attach the interface (ovs-vsctl add-port %s %s) or fix the design's cabling",
				snap.sc.name, p.Port, snap.sc.bridge, node, p.Alias, snap.sc.bridge, p.Port)
		}
		if p.Enabled && deref(snap.byName[p.Port].AdminState) == "down" {
			return nil, 0, drivers.Errorf(drivers.NeedsIntervention,
				"ovs: switch %s: port %s (node %s, NIC %s) is administratively down, which OVSDB cannot undo: bring it up (ovs-ofctl mod-port %s %s up), then retry",
				snap.sc.name, p.Port, node, p.Alias, snap.sc.bridge, p.Port)
		}
		ours[p.Port] = true
	}
	b := &opBuilder{cl: cl, snap: snap, node: node, ours: ours, removed: map[string]bool{}}
	for _, w := range wants(node, ports) {
		if err := b.port(w); err != nil {
			return nil, 0, err
		}
	}
	return b.finish()
}

// opBuilder collects a switch's operations.
type opBuilder struct {
	cl      client.Client
	snap    *snapshot
	node    string
	ours    map[string]bool // the node's design ports on this switch
	ops     []ovsdb.Operation
	changes int
	removed map[string]bool // Port UUIDs removed from the bridge
	added   []string        // named UUIDs of new Ports
}

// port updates the OVS Port w already is, or replaces the Ports its
// members are in by a new one.
func (b *opBuilder) port(w want) error {
	owners := map[string]*port{}
	var uuids []string
	for _, m := range w.members {
		owners[b.snap.owner[m].UUID] = b.snap.owner[m]
		uuids = append(uuids, b.snap.byName[m].UUID)
	}
	var cur *port
	for _, o := range owners {
		cur = o
	}
	if len(owners) == 1 && cur.Name == w.name && sameSet(cur.Interfaces, uuids) {
		if err := b.update(cur, w); err != nil {
			return err
		}
		return b.ifaces(w)
	}
	for _, o := range slices.SortedFunc(maps.Values(owners), func(a, c *port) int { return strings.Compare(a.Name, c.Name) }) {
		if err := b.remove(o, w); err != nil {
			return err
		}
	}
	if err := b.create(w, uuids); err != nil {
		return err
	}
	return b.ifaces(w)
}

func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(b, x) })
}

// remove takes Port o off the bridge (and deletes it) so its members can
// be regrouped; o may hold only this node's ports on this switch.
func (b *opBuilder) remove(o *port, w want) error {
	if b.removed[o.UUID] {
		return nil
	}
	for _, u := range o.Interfaces {
		i := b.snap.ifaces[u]
		if i == nil || !b.ours[i.Name] {
			name := "an interface" // not read: not one of the plan's
			if i != nil {
				name = i.Name
			}
			return drivers.Errorf(drivers.Permanent,
				"ovs: switch %s: port %s holds %s, which node %s's plan does not name, with its port %s: regroup it by hand (ovs-vsctl del-port %s), then retry",
				b.snap.sc.name, o.Name, name, b.node, w.members[0], o.Name)
		}
	}
	b.removed[o.UUID] = true
	mut, err := b.bridgePorts(ovsdb.MutateOperationDelete, o.UUID)
	if err != nil {
		return err
	}
	del, err := b.cl.Where(&port{UUID: o.UUID}).Delete()
	if err != nil {
		return err
	}
	b.ops = append(append(b.ops, mut...), del...)
	b.changes++
	return nil
}

// bridgePorts is the mutation inserting or deleting a port of the bridge.
func (b *opBuilder) bridgePorts(m ovsdb.Mutator, uuid string) ([]ovsdb.Operation, error) {
	br := &bridge{UUID: b.snap.bridge.UUID}
	return b.cl.Where(&bridge{UUID: br.UUID}).Mutate(br, model.Mutation{Field: &br.Ports, Mutator: m, Value: []string{uuid}})
}

// create inserts w as a new Port of the bridge over the interfaces uuids.
func (b *opBuilder) create(w want, uuids []string) error {
	p := desired(&port{}, w, b.node)
	p.UUID = "newport" + strconv.Itoa(len(b.added))
	p.Name = w.name
	p.Interfaces = uuids
	ins, err := b.cl.Create(p)
	if err != nil {
		return err
	}
	mut, err := b.bridgePorts(ovsdb.MutateOperationInsert, p.UUID)
	if err != nil {
		return err
	}
	b.added = append(b.added, p.UUID)
	b.ops = append(append(b.ops, ins...), mut...)
	b.changes++
	return nil
}

// update writes the columns of cur that differ from what w wants.
func (b *opBuilder) update(cur *port, w want) error {
	d := desired(cur, w, b.node)
	var fields []any
	if !equalPtr(cur.Tag, d.Tag) {
		fields = append(fields, &d.Tag)
	}
	if !slices.Equal(sortedInts(cur.Trunks), sortedInts(d.Trunks)) {
		fields = append(fields, &d.Trunks)
	}
	for _, f := range []struct{ cur, want **string }{{&cur.VLANMode, &d.VLANMode}, {&cur.BondMode, &d.BondMode}, {&cur.LACP, &d.LACP}} {
		if !equalPtr(*f.cur, *f.want) {
			fields = append(fields, f.want)
		}
	}
	if !maps.Equal(cur.OtherConfig, d.OtherConfig) {
		fields = append(fields, &d.OtherConfig)
	}
	if !maps.Equal(cur.ExternalIDs, d.ExternalIDs) {
		fields = append(fields, &d.ExternalIDs)
	}
	if len(fields) == 0 {
		return nil
	}
	ops, err := b.cl.Where(&port{UUID: cur.UUID}).Update(d, fields...)
	if err != nil {
		return err
	}
	b.ops = append(b.ops, ops...)
	b.changes += len(fields)
	return nil
}

// ifaces sets the members' MTU (mtu_request; none: the default).
func (b *opBuilder) ifaces(w want) error {
	var mtu *int
	if w.cfg.MTU != 0 {
		mtu = &w.cfg.MTU
	}
	for _, m := range w.members {
		i := b.snap.byName[m]
		if equalPtr(i.MTURequest, mtu) {
			continue
		}
		set := &iface{UUID: i.UUID, MTURequest: mtu}
		ops, err := b.cl.Where(&iface{UUID: i.UUID}).Update(set, &set.MTURequest)
		if err != nil {
			return err
		}
		b.ops = append(b.ops, ops...)
		b.changes++
	}
	return nil
}

func (b *opBuilder) finish() ([]ovsdb.Operation, int, error) { return b.ops, b.changes, nil }

// desired is cur (a Port read, or a new one) with the columns w asks
// for; keys of other_config and external_ids the driver does not own
// are kept.
func desired(cur *port, w want, node string) *port {
	c := w.cfg
	d := &port{UUID: cur.UUID, Name: cur.Name, Interfaces: cur.Interfaces,
		OtherConfig: maps.Clone(cur.OtherConfig), ExternalIDs: maps.Clone(cur.ExternalIDs)}
	if d.OtherConfig == nil {
		d.OtherConfig = map[string]string{}
	}
	if d.ExternalIDs == nil {
		d.ExternalIDs = map[string]string{}
	}
	for _, k := range []string{keyAdmin, keyLACPTime} {
		delete(d.OtherConfig, k)
	}
	for _, k := range []string{keyLAG, keyMode, keyVLAN, keyTrunks} {
		delete(d.ExternalIDs, k)
	}
	d.ExternalIDs[keyNode] = node
	setVLANs(d, c)
	if !c.Enabled {
		d.ExternalIDs[keyMode], d.ExternalIDs[keyVLAN], d.ExternalIDs[keyTrunks] = c.Mode, strconv.Itoa(c.VLAN), joinInts(c.Trunk)
		d.OtherConfig[keyAdmin] = "down"
		mode, tag := "access", blackholeVLAN
		d.VLANMode, d.Tag, d.Trunks = &mode, &tag, nil
	}
	if c.LAG != "" {
		d.ExternalIDs[keyLAG] = c.LAG
	}
	if len(w.members) > 1 {
		mode := "active-backup"
		if c.LACP != "" {
			mode = "balance-tcp"
		}
		d.BondMode = &mode
	}
	if c.LACP != "" {
		lacp := c.LACP
		d.LACP = &lacp
		d.OtherConfig[keyLACPTime] = c.LACPRate
	}
	return d
}

// setVLANs sets d's VLAN columns for c: access (tag); a trunk with a
// native VLAN (native-untagged, the native VLAN among the trunks); a
// trunk without (trunk). A trunk's list is never empty, since OVS reads
// an empty one as every VLAN: with nothing to list it lists the
// blackhole VLAN.
func setVLANs(d *port, c drivers.PortConfig) {
	vlans := slices.Clone(c.Trunk)
	switch {
	case c.Mode == drivers.ModeAccess:
		mode, tag := "access", c.VLAN
		d.VLANMode, d.Tag, d.Trunks = &mode, &tag, nil
		return
	case c.VLAN != 0:
		mode, tag := "native-untagged", c.VLAN
		d.VLANMode, d.Tag = &mode, &tag
		vlans = c.VLANs()
	default:
		mode := "trunk"
		d.VLANMode, d.Tag = &mode, nil
	}
	if len(vlans) == 0 {
		vlans = []int{blackholeVLAN}
	}
	d.Trunks = vlans
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func sortedInts(s []int) []int { return slices.Sorted(slices.Values(s)) }

func joinInts(s []int) string {
	f := make([]string, len(s))
	for i, v := range s {
		f[i] = strconv.Itoa(v)
	}
	return strings.Join(f, ",")
}
