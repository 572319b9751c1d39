package orchestrator

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

// The paged fabric view (GET /fabric): each cabled port once, in switch
// then port order, a page at a time. Only the page's ports are read from
// their switches, and only the nodes of the page's ports that report an
// LLDP neighbour have their inventory read.

// Page bounds of the fabric view, in ports.
const (
	DefaultFabricPage = 1000
	MaxFabricPage     = 10000
)

// ErrFabricQuery is wrapped by a FabricPage error about the query itself
// (a cursor that is not one): the caller's mistake.
var ErrFabricQuery = errors.New("fabric query")

// FabricQuery narrows and pages the fabric view.
type FabricQuery struct {
	Nodes    []string // only these nodes' ports (none: every node's)
	Switches []string // only these switches' ports (none: every switch's)
	After    string   // a page's Next: the ports after it ("": from the first)
	Limit    int      // ports in the page (0: DefaultFabricPage)
}

// FabricPage is one page of the fabric view.
type FabricPage struct {
	// Switches: every switch in view, with its port count and VLANs (of
	// the whole view, not the page); Error is set for a switch read for
	// this page that failed.
	Switches []FabricSwitchSummary
	// Ports: the page's ports, each once, by switch then port.
	Ports []FabricPort
	// Unplanned: nodes whose ports could not be planned (first page only).
	Unplanned []FabricNode
	Total     int    // ports in view
	Next      string // the next page's After ("": this is the last)
	Read      bool
	ReadNote  string
}

// FabricSwitchSummary is one switch of the view without its ports.
type FabricSwitchSummary struct {
	Name  string
	Site  string
	Ports int
	VLANs []int
	Error string
}

// FabricPage is one page of the fabric view of d. The design's port
// index (every cabled port in page order, each switch's VLANs) is built
// once per design; a page plans and reads only its own nodes' ports.
func (e *Engine) FabricPage(ctx context.Context, d *design.Design, q FabricQuery) (FabricPage, error) {
	pg := FabricPage{Switches: []FabricSwitchSummary{}, Ports: []FabricPort{}}
	if q.Limit <= 0 {
		q.Limit = DefaultFabricPage
	}
	q.Limit = min(q.Limit, MaxFabricPage)
	after, err := decodeFabricCursor(q.After)
	if err != nil || d == nil {
		return pg, err
	}
	idx := indexOf(d)
	keys := idx.view(q)
	pg.Switches, pg.Total = idx.summaries(keys, q.Switches), len(keys)
	start, _ := slices.BinarySearchFunc(keys, after, func(k portKey, a [2]string) int { return portOrder(k.Switch, k.Port, a[0], a[1]) })
	if q.After != "" && start < len(keys) && keys[start].Switch == after[0] && keys[start].Port == after[1] {
		start++
	}
	end := min(start+q.Limit, len(keys))
	if end < len(keys) {
		pg.Next = encodeFabricCursor(keys[end-1].SwitchPort)
	}
	nodes, err := e.planPage(ctx, d, keys[start:end], idx.unplannedIn(q, q.After == ""))
	if err != nil {
		return pg, err
	}
	for _, k := range keys[start:end] {
		if p, ok := nodes.port(k); ok {
			pg.Ports = append(pg.Ports, p)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(nodes)) {
		if n := nodes[name]; n.Error != "" {
			pg.Unplanned = append(pg.Unplanned, FabricNode{Node: n.Node, Site: n.Site, Phase: n.Phase, Error: n.Error})
		}
	}
	reader, note := e.networkReader()
	pg.Read, pg.ReadNote = reader != nil, note
	e.readPage(ctx, d, reader, &pg, nodes)
	return pg, nil
}

// pageNodes are the planned nodes of a page, by name.
type pageNodes map[string]FabricNode

// port is the planned port of key k.
func (ns pageNodes) port(k portKey) (FabricPort, bool) {
	for _, p := range ns[k.Node].Ports {
		if p.SwitchPort == k.SwitchPort {
			return p, true
		}
	}
	return FabricPort{}, false
}

// planPage plans, in their current phases, the nodes of the page's
// ports and the nodes more (those whose ports could not be planned).
func (e *Engine) planPage(ctx context.Context, d *design.Design, keys []portKey, more []string) (pageNodes, error) {
	names := slices.Clone(more)
	for _, k := range keys {
		names = append(names, k.Node)
	}
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	out := make(pageNodes, len(names))
	if len(names) == 0 {
		return out, nil
	}
	recs, err := e.fabricRecords(ctx, names)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		out[name] = planNodePorts(d, d.Nodes[name], recs[name])
	}
	return out, nil
}

// portKey is one cabled port of the design and its node.
type portKey struct {
	drivers.SwitchPort
	Node string
}

// fabricIndex is what a design says of its fabric whatever its nodes'
// phases: every cabled port in page order, each switch's VLANs over
// every phase, and the nodes whose ports could not be planned in some
// phase.
type fabricIndex struct {
	keys      []portKey
	vlans     map[string][]int
	site      map[string]string // switch → Site
	declared  map[string]bool   // switches of the design's fabrics
	unplanned []string
}

// fabricIndexCache holds the index of the last design asked for (a
// current design is not changed in place: a new one is a new revision).
var fabricIndexCache struct {
	sync.Mutex
	d   *design.Design
	idx *fabricIndex
}

// indexOf is d's fabric index, built once for the last design.
func indexOf(d *design.Design) *fabricIndex {
	fabricIndexCache.Lock()
	defer fabricIndexCache.Unlock()
	if fabricIndexCache.d != d {
		fabricIndexCache.d, fabricIndexCache.idx = d, buildIndex(d)
	}
	return fabricIndexCache.idx
}

// buildIndex plans every node's ports in every phase.
func buildIndex(d *design.Design) *fabricIndex {
	idx := &fabricIndex{vlans: map[string][]int{}, site: map[string]string{}, declared: map[string]bool{}}
	for _, s := range d.AllSwitches() {
		idx.vlans[s.Name], idx.site[s.Name], idx.declared[s.Name] = []int{}, s.Site, true
	}
	for _, name := range d.NodeNames() {
		n, planned, failed := d.Nodes[name], false, false
		for _, phase := range drivers.Phases {
			plan, err := driverspec.Ports(d, n, phase)
			if err != nil {
				failed = true
				continue
			}
			for _, c := range plan {
				if !planned {
					idx.keys = append(idx.keys, portKey{SwitchPort: c.SwitchPort, Node: name})
				}
				if _, ok := idx.site[c.Switch]; !ok {
					idx.site[c.Switch] = d.SiteNameOf(n)
				}
				idx.vlans[c.Switch] = append(idx.vlans[c.Switch], c.VLANs()...)
			}
			planned = true
		}
		if failed {
			idx.unplanned = append(idx.unplanned, name)
		}
	}
	for sw, vs := range idx.vlans {
		idx.vlans[sw] = slices.Compact(slices.Sorted(slices.Values(vs)))
	}
	slices.SortFunc(idx.keys, func(a, b portKey) int { return portOrder(a.Switch, a.Port, b.Switch, b.Port) })
	return idx
}

// view is the index's ports of q's nodes and switches.
func (idx *fabricIndex) view(q FabricQuery) []portKey {
	if len(q.Nodes) == 0 && len(q.Switches) == 0 {
		return idx.keys
	}
	return slices.DeleteFunc(slices.Clone(idx.keys), func(k portKey) bool {
		return (len(q.Nodes) > 0 && !slices.Contains(q.Nodes, k.Node)) || (len(q.Switches) > 0 && !slices.Contains(q.Switches, k.Switch))
	})
}

// unplannedIn are the nodes of q that may fail to plan, on the first
// page only.
func (idx *fabricIndex) unplannedIn(q FabricQuery, first bool) []string {
	if !first {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(idx.unplanned), func(n string) bool { return len(q.Nodes) > 0 && !slices.Contains(q.Nodes, n) })
}

// summaries are the switches in view (of only, when given; else every
// switch of the design's fabrics and of the view's ports), with their
// ports in view counted.
func (idx *fabricIndex) summaries(keys []portKey, only []string) []FabricSwitchSummary {
	count := map[string]int{}
	for _, k := range keys {
		count[k.Switch]++
	}
	out := []FabricSwitchSummary{}
	for _, sw := range slices.Sorted(maps.Keys(idx.site)) {
		if (len(only) == 0 && (count[sw] > 0 || idx.declared[sw])) || slices.Contains(only, sw) {
			out = append(out, FabricSwitchSummary{Name: sw, Site: idx.site[sw], Ports: count[sw], VLANs: idx.vlans[sw]})
		}
	}
	return out
}

// portOrder orders ports by switch, then port name (numbers as numbers,
// then bytes).
func portOrder(swA, portA, swB, portB string) int {
	return cmp.Or(strings.Compare(swA, swB), naturalCompare(portA, portB), strings.Compare(portA, portB))
}

// readPage reads the page's ports from their switches (when the driver
// can), compares each with its desired configuration and names the
// switches that failed.
func (e *Engine) readPage(ctx context.Context, d *design.Design, reader drivers.NetworkReader, pg *FabricPage, nodes pageNodes) {
	states := map[drivers.SwitchPort]drivers.PortState{}
	errs := map[string]string{}
	if reader != nil && len(pg.Ports) > 0 {
		bySwitch := map[string][]drivers.SwitchPort{}
		for _, p := range pg.Ports {
			bySwitch[p.Switch] = append(bySwitch[p.Switch], p.SwitchPort)
		}
		states, errs = readSwitches(ctx, reader, bySwitch)
	}
	// Inventories only of the nodes a neighbour was reported for, with
	// all their ports (a neighbour naming another of the node's NICs).
	var heard []FabricNode
	seen := map[string]bool{}
	for _, p := range pg.Ports {
		if st, ok := states[p.SwitchPort]; ok && st.Neighbor != nil && !seen[p.Node] {
			seen[p.Node] = true
			heard = append(heard, nodes[p.Node])
		}
	}
	who := newNeighbours(ctx, e, d, heard)
	for i := range pg.Ports {
		p := &pg.Ports[i]
		st, read := states[p.SwitchPort]
		settlePort(p, comparePort(p, st, read, who), read, nodes[p.Node].NoRecord, errs[p.Switch], pg.ReadNote)
	}
	for i := range pg.Switches {
		pg.Switches[i].Error = errs[pg.Switches[i].Name]
	}
}

// encodeFabricCursor is the cursor after port p.
func encodeFabricCursor(p drivers.SwitchPort) string {
	return base64.RawURLEncoding.EncodeToString([]byte(p.Switch + "\x00" + p.Port))
}

// decodeFabricCursor is the switch and port a cursor is after.
func decodeFabricCursor(s string) ([2]string, error) {
	if s == "" {
		return [2]string{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	sw, port, ok := strings.Cut(string(b), "\x00")
	if err != nil || !ok || len(s) > 1024 {
		return [2]string{}, fmt.Errorf("%w: after %.40q is not a cursor of this view (use a page's next as it is)", ErrFabricQuery, s)
	}
	return [2]string{sw, port}, nil
}
