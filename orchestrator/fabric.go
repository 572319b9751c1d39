package orchestrator

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// The fabric view: every switch port the design cables to a node, what
// it must be in the node's current phase, what the switch reports (when
// the network driver reads ports back: drivers.NetworkReader) and what
// the port's LLDP neighbour says of the cabling. Read only.

// Bounds of a fabric read: ports per ReadPorts call, switches read at
// once, and the time one switch's read may take.
const (
	fabricReadBatch    = 512
	fabricReadParallel = 4
	fabricReadTimeout  = 20 * time.Second
)

// Port states in the fabric view.
const (
	PortOK      = "ok"      // the switch reports the desired configuration
	PortDiffers = "differs" // it reports another (Diff says how)
	PortMissing = "missing" // the switch has no such port
	PortUnread  = "unread"  // not read: the driver cannot, or the switch did not answer
	PortNoPlan  = "no-plan" // the node's desired configuration could not be computed
	// PortUnmanaged: the node was never run (no record): no switch state
	// is wanted of its ports yet, so what the switch holds is no
	// difference.
	PortUnmanaged = "unmanaged"
)

// LLDP findings of a port.
const (
	FindingCabled     = "cabled"      // the neighbour is the designed node
	FindingMiscabled  = "miscabled"   // the neighbour is another device
	FindingNoNeighbor = "no-neighbor" // the port reports none
	FindingUnread     = "unread"      // the switch was not read
	FindingMissing    = "missing"     // the switch has no such port
	FindingNoPlan     = "no-plan"     // the node's ports could not be planned
)

// FabricView is the fabric of a design as the engine sees it.
type FabricView struct {
	Switches []FabricSwitch
	Nodes    []FabricNode
	Findings []FabricFinding
	// Read: the network driver reads ports back; else ReadNote says why
	// the view holds the desired configuration only.
	Read     bool
	ReadNote string
}

// FabricSwitch is one switch: its cabled ports (by port name) and every
// VLAN they carry in their desired configuration.
type FabricSwitch struct {
	Name  string
	Site  string
	Ports []FabricPort
	VLANs []int
	// Error is why the switch could not be read ("" when it was, or the
	// driver reads no switch).
	Error string
}

// FabricNode is one node's ports, in its interfaces' order.
type FabricNode struct {
	Node  string
	Site  string
	Phase drivers.Phase
	Ports []FabricPort
	// Error is why the node's ports could not be planned.
	Error string
	// NoRecord: the node was never run; its ports are PortUnmanaged.
	NoRecord bool
}

// FabricPort is one cabled port.
type FabricPort struct {
	drivers.SwitchPort
	Node      string
	Alias     string
	Interface string
	Phase     drivers.Phase
	Desired   drivers.PortConfig
	Observed  *drivers.PortState // nil: not read
	State     string             // PortOK ...
	Diff      []string           // how Observed differs from Desired
	LLDP      string             // what the LLDP neighbour says, in words
	Finding   string             // the LLDP finding's kind (FindingCabled ...)
}

// FabricFinding is what the view found about one port's cabling.
type FabricFinding struct {
	Switch  string
	Port    string
	Node    string
	Kind    string // FindingCabled ...
	Message string
}

// NodePhase is the phase a node's ports are in for its record (nil: no
// record): production once deployed, quarantine once released (by a
// cancel too) or deleted, provisioning before (and while a deploy runs
// or after one failed short of its production ports, and while rescue
// or hardware tests have them).
func NodePhase(r *record.NodeRecord) drivers.Phase {
	if r == nil {
		return drivers.PhaseProvisioning
	}
	if r.Stage == record.StageReleased { // a destroy's, or a cancel's that released the machine
		return drivers.PhaseQuarantine
	}
	if portsLent(r) { // fabric_drift.go: rescue or tests moved them for a PXE boot
		return drivers.PhaseProvisioning
	}
	switch r.LifecycleState() {
	case record.LifecycleDeployed:
		return drivers.PhaseProduction
	case record.LifecycleReleasing, record.LifecycleReleased, record.LifecycleDeleted:
		return drivers.PhaseQuarantine
	}
	if r.Stage == record.StageBootstrap && r.Step > 0 { // the production ports were set (stages.go bootstrap)
		return drivers.PhaseProduction
	}
	return drivers.PhaseProvisioning
}

// Fabric is the fabric view of d: every node's cabled ports (only those
// of nodes, when given), read from the switches when the network driver
// can (one ReadPorts per switch and batch, a few switches at once).
func (e *Engine) Fabric(ctx context.Context, d *design.Design, nodes ...string) (FabricView, error) {
	v := FabricView{}
	if d == nil {
		return v, nil
	}
	recs, err := e.fabricRecords(ctx, nodes)
	if err != nil {
		return v, err
	}
	names := d.NodeNames()
	if len(nodes) > 0 {
		names = slices.Compact(slices.Sorted(slices.Values(nodes))) // each once
		names = slices.DeleteFunc(names, func(n string) bool { return d.Nodes[n] == nil })
	}
	for _, name := range names {
		v.Nodes = append(v.Nodes, planNodePorts(d, d.Nodes[name], recs[name]))
	}
	reader, note := e.networkReader()
	v.Read, v.ReadNote = reader != nil, note
	bySwitch := portsBySwitch(v.Nodes)
	states := map[drivers.SwitchPort]drivers.PortState{}
	errs := map[string]string{}
	if reader != nil {
		states, errs = readSwitches(ctx, reader, bySwitch)
	}
	e.fabricCompare(ctx, d, &v, states, errs)
	v.Switches = fabricSwitches(d, v.Nodes, errs)
	return v, nil
}

// fabricRecords are the node records by name: of nodes when given, else
// every one.
func (e *Engine) fabricRecords(ctx context.Context, nodes []string) (map[string]*record.NodeRecord, error) {
	out := map[string]*record.NodeRecord{}
	if len(nodes) > 0 {
		for _, n := range nodes {
			r, ok, err := e.rec.node(ctx, n)
			if err != nil {
				return nil, err
			}
			if ok {
				out[n] = &r
			}
		}
		return out, nil
	}
	recs, err := e.rec.nodes(ctx)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		out[recs[i].Name] = &recs[i]
	}
	return out, nil
}

// networkReader is the network driver's read-back side; nil, with why,
// when there is none.
func (e *Engine) networkReader() (drivers.NetworkReader, string) {
	if e.cfg.Drivers.Network == nil {
		return nil, "no network driver: the desired configuration only"
	}
	r, ok := drivers.ReaderOf(e.cfg.Drivers.Network) // through wrappers (serve's, the metrics')
	if !ok {
		return nil, "the network driver cannot read ports back: the desired configuration only"
	}
	return r, ""
}

// planNodePorts is a node's ports as its phase wants them.
func planNodePorts(d *design.Design, n *design.Node, r *record.NodeRecord) FabricNode {
	fn := FabricNode{Node: n.Metadata.Name, Phase: NodePhase(r), NoRecord: r == nil}
	if s := d.SiteOf(n); s != nil {
		fn.Site = s.Metadata.Name
	}
	plan, err := driverspec.Ports(d, n, fn.Phase)
	if err != nil {
		fn.Error = err.Error()
		return fn
	}
	for _, c := range plan {
		fn.Ports = append(fn.Ports, FabricPort{SwitchPort: c.SwitchPort, Node: c.Node, Alias: c.Alias, Interface: c.Interface,
			Phase: fn.Phase, Desired: c, State: PortUnread})
	}
	return fn
}

// portsBySwitch lists the ports to read, by switch.
func portsBySwitch(nodes []FabricNode) map[string][]drivers.SwitchPort {
	out := map[string][]drivers.SwitchPort{}
	for _, n := range nodes {
		for _, p := range n.Ports {
			out[p.Switch] = append(out[p.Switch], p.SwitchPort)
		}
	}
	return out
}

// switchReadSlots bounds the switch reads of every fabric view, drift
// run and repair of the process together (GET /fabric is a viewer's:
// however many ask at once, the switches see fabricReadParallel reads).
var switchReadSlots = make(chan struct{}, fabricReadParallel)

// readSwitches reads every switch's ports, at most fabricReadParallel
// switches at once in the process; a switch that fails, or that was not
// read because ctx ended while waiting for a slot, is named in the
// errors, by switch.
func readSwitches(ctx context.Context, r drivers.NetworkReader, bySwitch map[string][]drivers.SwitchPort) (map[drivers.SwitchPort]drivers.PortState, map[string]string) {
	states := map[drivers.SwitchPort]drivers.PortState{}
	errs := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, sw := range slices.Sorted(maps.Keys(bySwitch)) {
		select {
		case switchReadSlots <- struct{}{}:
		case <-ctx.Done():
			mu.Lock()
			errs[sw] = fmt.Sprintf("switch %s: not read: %v while waiting for other switch reads", sw, ctx.Err())
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-switchReadSlots; wg.Done() }()
			got, err := readSwitch(ctx, r, sw, bySwitch[sw])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[sw] = err.Error()
				return
			}
			maps.Copy(states, got)
		}()
	}
	wg.Wait()
	return states, errs
}

// readSwitch reads one switch's ports, fabricReadBatch at a time, within
// fabricReadTimeout.
func readSwitch(ctx context.Context, r drivers.NetworkReader, sw string, ports []drivers.SwitchPort) (map[drivers.SwitchPort]drivers.PortState, error) {
	ctx, cancel := context.WithTimeout(ctx, fabricReadTimeout)
	defer cancel()
	out := make(map[drivers.SwitchPort]drivers.PortState, len(ports))
	for start := 0; start < len(ports); start += fabricReadBatch {
		batch := ports[start:min(start+fabricReadBatch, len(ports))]
		st, err := r.ReadPorts(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("switch %s: reading %d ports: %w; check that the switch answers at its address (`orchestrator drivers` probes it)", sw, len(batch), err)
		}
		if len(st) != len(batch) {
			return nil, fmt.Errorf("switch %s: asked for %d ports, the driver answered %d", sw, len(batch), len(st))
		}
		for i, p := range batch {
			out[p] = st[i]
		}
	}
	return out, nil
}

// fabricCompare fills each port's observed state, difference and LLDP
// finding, and the view's findings.
func (e *Engine) fabricCompare(ctx context.Context, d *design.Design, v *FabricView, states map[drivers.SwitchPort]drivers.PortState, errs map[string]string) {
	who := newNeighbours(ctx, e, d, v.Nodes)
	for i := range v.Nodes {
		n := &v.Nodes[i]
		if n.Error != "" {
			v.Findings = append(v.Findings, FabricFinding{Node: n.Node, Kind: FindingNoPlan, Message: n.Error})
			continue
		}
		for j := range n.Ports {
			p := &n.Ports[j]
			st, read := states[p.SwitchPort]
			v.Findings = append(v.Findings, settlePort(p, comparePort(p, st, read, who), read, n.NoRecord, errs[p.Switch], v.ReadNote))
		}
	}
}

// settlePort fills p's LLDP words and finding from f, and the state of
// the port of a node never run (noRecord): unmanaged, not a difference.
// A port not read carries its switch's error (swErr); the finding says
// the driver's note instead when there is none.
func settlePort(p *FabricPort, f FabricFinding, read, noRecord bool, swErr, note string) FabricFinding {
	p.LLDP, p.Finding = f.Message, f.Kind
	if !read { // the switch's error on the port; the driver's note once, on the view
		p.LLDP = swErr
		f.Message = orDefault(swErr, note)
	}
	if noRecord && (p.State == PortOK || p.State == PortDiffers) {
		p.State, p.Diff = PortUnmanaged, nil
	}
	return f
}

// comparePort fills p from the state read (read false: none) and
// returns its finding.
func comparePort(p *FabricPort, st drivers.PortState, read bool, who neighbours) FabricFinding {
	f := FabricFinding{Switch: p.Switch, Port: p.Port, Node: p.Node}
	switch {
	case !read:
		f.Kind = FindingUnread
		return f
	case !st.Found:
		p.Observed, p.State = &st, PortMissing
		f.Kind, f.Message = FindingMissing, fmt.Sprintf("switch %s has no port %s", p.Switch, p.Port)
		return f
	}
	st.Neighbor = boundNeighbor(st.Neighbor)
	p.Observed = &st
	p.State = PortOK
	if p.Diff = p.Desired.Diff(st.PortConfig); len(p.Diff) > 0 {
		p.State = PortDiffers
	}
	f.Kind, f.Message = who.finding(p, st.Neighbor)
	return f
}

// fabricSwitches groups the nodes' ports by switch: every switch of the
// design's fabric, and any other the cabling names.
func fabricSwitches(d *design.Design, nodes []FabricNode, errs map[string]string) []FabricSwitch {
	by := map[string]*FabricSwitch{}
	for _, s := range d.AllSwitches() {
		by[s.Name] = &FabricSwitch{Name: s.Name, Site: s.Site}
	}
	for _, n := range nodes {
		for _, p := range n.Ports {
			sw := by[p.Switch]
			if sw == nil {
				sw = &FabricSwitch{Name: p.Switch, Site: n.Site}
				by[p.Switch] = sw
			}
			sw.Ports = append(sw.Ports, p)
			for _, vl := range p.Desired.VLANs() {
				if !slices.Contains(sw.VLANs, vl) {
					sw.VLANs = append(sw.VLANs, vl)
				}
			}
		}
	}
	out := make([]FabricSwitch, 0, len(by))
	for _, name := range slices.Sorted(maps.Keys(by)) {
		sw := by[name]
		sw.Error = errs[name]
		slices.Sort(sw.VLANs)
		slices.SortStableFunc(sw.Ports, func(a, b FabricPort) int { return naturalCompare(a.Port, b.Port) })
		out = append(out, *sw)
	}
	return out
}

// naturalCompare orders port names with their numbers as numbers
// (Ethernet4 before Ethernet12).
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitsPrefix(a), digitsPrefix(b)
		if da != "" && db != "" {
			na, nb := strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitsPrefix is the run of ASCII digits s starts with.
func digitsPrefix(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// maxLLDPField bounds what the view keeps of each field a switch
// reports of a neighbour (an LLDP TLV's string is at most 255 bytes).
const maxLLDPField = 255

// boundNeighbor is nb with each field cut to maxLLDPField bytes.
func boundNeighbor(nb *drivers.LLDPNeighbor) *drivers.LLDPNeighbor {
	if nb == nil {
		return nil
	}
	cut := func(s string) string { return s[:min(len(s), maxLLDPField)] }
	return &drivers.LLDPNeighbor{ChassisID: cut(nb.ChassisID), SystemName: cut(nb.SystemName), PortID: cut(nb.PortID), PortDescr: cut(nb.PortDescr)}
}

// neighbourWords names a neighbour in a few words.
func neighbourWords(nb *drivers.LLDPNeighbor) string {
	var parts []string
	if nb.SystemName != "" {
		parts = append(parts, printableShort(nb.SystemName))
	}
	if nb.ChassisID != "" {
		parts = append(parts, "chassis "+printableShort(nb.ChassisID))
	}
	if nb.PortID != "" {
		parts = append(parts, "port "+printableShort(nb.PortID))
	}
	return strings.Join(parts, " ")
}

// printableShort bounds a switch-reported string for a message.
func printableShort(s string) string {
	const most = 64
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	if len(s) > most {
		s = s[:most] + "…"
	}
	return s
}
