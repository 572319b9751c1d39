package gnmi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/slipway-dev/slipway/drivers"
)

// The paths the driver reads, per switch.
var (
	pathInterfaces = []*gpb.PathElem{{Name: "interfaces"}}
	pathVLANs      = []*gpb.PathElem{{Name: "network-instances"}, {Name: "network-instance", Key: map[string]string{"name": "default"}}, {Name: "vlans"}}
	pathLACP       = []*gpb.PathElem{{Name: "lacp"}, {Name: "interfaces"}}
	pathLLDP       = []*gpb.PathElem{{Name: "lldp"}, {Name: "interfaces"}}
)

// maxPortPaths is the most ports read by name in one Get: targets bound
// the paths of a request (the lab at 256); more are read as the
// switch's whole /interfaces.
const maxPortPaths = 64

// read Gets what the switch says of ports, of the LAG interfaces they
// are members of and of lags, their LACP, and, when asked, its VLANs and
// LLDP table. The ports are read by name; a switch that answers
// NotFound (one of them does not exist) is read whole (/interfaces), so
// that the missing port reads as not found.
func (d *Driver) read(ctx context.Context, e *endpoint, ports, lags []string, vlans, lldp bool) (*switchState, error) {
	s := newSwitchState()
	var paths [][]*gpb.PathElem
	for _, p := range ports {
		paths = append(paths, ifElems(p))
	}
	if len(ports) > maxPortPaths {
		paths = [][]*gpb.PathElem{pathInterfaces}
	}
	if vlans {
		paths = append(paths, pathVLANs)
	}
	found, err := d.get(ctx, e, s, paths)
	if err == nil && !found {
		paths = [][]*gpb.PathElem{pathInterfaces}
		if vlans {
			paths = append(paths, pathVLANs)
		}
		found, err = d.get(ctx, e, s, paths)
		if err == nil && !found {
			err = drivers.Errorf(drivers.Permanent, "%s: switch %s (%s) has no %s or no %s", Name, e.Name, e.Address,
				"/interfaces", "/network-instances/network-instance[name=default]/vlans")
		}
	}
	if err != nil {
		return nil, err
	}
	return s, d.readLAGs(ctx, e, s, lags, lldp)
}

// readLAGs reads the LAG interfaces the ports belong to and lags, the
// LACP configuration when there is a LAG, and the LLDP table when lldp:
// each of them may be absent.
func (d *Driver) readLAGs(ctx context.Context, e *endpoint, s *switchState, lags []string, lldp bool) error {
	want := slices.Clone(lags)
	for _, in := range s.ifaces {
		if in.aggregateID != "" && !slices.Contains(want, in.aggregateID) {
			want = append(want, in.aggregateID)
		}
	}
	slices.Sort(want)
	var optional [][]*gpb.PathElem
	for _, l := range want {
		if s.ifaces[l] == nil {
			optional = append(optional, ifElems(l))
		}
	}
	if len(want) > 0 {
		optional = append(optional, pathLACP)
	}
	if lldp {
		optional = append(optional, pathLLDP)
	}
	for _, p := range optional {
		if _, err := d.get(ctx, e, s, [][]*gpb.PathElem{p}); err != nil {
			return err
		}
	}
	return nil
}

func ifElems(name string) []*gpb.PathElem {
	return []*gpb.PathElem{{Name: "interfaces"}, {Name: "interface", Key: map[string]string{"name": name}}}
}

// get Gets paths (JSON_IETF) into s; found is false when the switch
// answers NotFound (a path that holds nothing).
func (d *Driver) get(ctx context.Context, e *endpoint, s *switchState, paths [][]*gpb.PathElem) (bool, error) {
	req := &gpb.GetRequest{Prefix: &gpb.Path{Target: e.target}, Encoding: gpb.Encoding_JSON_IETF, Type: gpb.GetRequest_ALL}
	for _, p := range paths {
		req.Path = append(req.Path, &gpb.Path{Elem: p})
	}
	rctx, cancel := d.rpcContext(ctx, e)
	defer cancel()
	resp, err := e.client.Get(rctx, req)
	if status.Code(err) == codes.NotFound && ctx.Err() == nil {
		return false, nil
	}
	if err != nil {
		return false, e.rpcError(ctx, "Get", err)
	}
	for _, n := range resp.GetNotification() {
		for _, u := range n.GetUpdate() {
			if err := s.readUpdate(append(slices.Clone(n.GetPrefix().GetElem()), u.GetPath().GetElem()...), u.GetVal()); err != nil {
				return false, drivers.Errorf(drivers.Permanent, "%s: switch %s (%s) answered Get with %v", Name, e.Name, e.Address, err)
			}
		}
	}
	return true, nil
}

// readUpdate reads one update of a Get answer by the path it is at.
func (s *switchState) readUpdate(el []*gpb.PathElem, tv *gpb.TypedValue) error {
	var raw []byte
	switch v := tv.GetValue().(type) {
	case *gpb.TypedValue_JsonIetfVal:
		raw = v.JsonIetfVal
	case *gpb.TypedValue_JsonVal:
		raw = v.JsonVal
	default:
		return fmt.Errorf("a value of type %T (want JSON_IETF)", tv.GetValue())
	}
	v, err := decodeValue(raw)
	if err != nil {
		return err
	}
	names := make([]string, len(el))
	for i, e := range el {
		names[i] = local(e.GetName())
	}
	switch strings.Join(names, "/") {
	case "interfaces", "interfaces/interface":
		s.readInterfaces(entryList(v, el, "interface"))
	case "network-instances/network-instance/vlans", "network-instances/network-instance/vlans/vlan":
		s.readVLANs(v)
	case "lacp/interfaces", "lacp/interfaces/interface":
		s.readLACP(entryList(v, el, "interface"))
	case "lldp/interfaces", "lldp/interfaces/interface":
		s.readLLDP(entryList(v, el, "interface"))
	}
	return nil
}

// entryList turns the value of one list entry (a path ending in
// list[key=value]) into the list's container form, the entry's key
// leaf taken from the path when the value lacks it; any other value is
// returned as it is.
func entryList(v any, el []*gpb.PathElem, list string) any {
	if len(el) == 0 {
		return v
	}
	last := el[len(el)-1]
	m, ok := v.(map[string]any)
	if !ok || local(last.GetName()) != list || len(last.GetKey()) == 0 {
		return v
	}
	for k, kv := range last.GetKey() {
		if _, has := m[local(k)]; !has {
			m[local(k)] = kv
		}
	}
	return map[string]any{list: []any{m}}
}

// ReadPorts reads each port's configuration, link and LLDP neighbour;
// one Get per switch.
func (d *Driver) ReadPorts(ctx context.Context, ports []drivers.SwitchPort) ([]drivers.PortState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	states := map[string]*switchState{}
	out := make([]drivers.PortState, len(ports))
	for i, p := range ports {
		s := states[p.Switch]
		if s == nil {
			e, err := d.endpoint(p.Switch)
			if err != nil {
				return nil, err
			}
			if s, err = d.read(ctx, e, portsOn(ports, p.Switch), nil, false, true); err != nil {
				return nil, err
			}
			states[p.Switch] = s
		}
		out[i] = s.port(p)
	}
	return out, nil
}

// portsOn names the ports of refs on switch sw, each once.
func portsOn(refs []drivers.SwitchPort, sw string) []string {
	var out []string
	for _, r := range refs {
		if r.Switch == sw && !slices.Contains(out, r.Port) {
			out = append(out, r.Port)
		}
	}
	return out
}

func (d *Driver) endpoint(name string) (*endpoint, error) {
	e := d.switches[name]
	if e == nil {
		return nil, drivers.Errorf(drivers.Permanent, "%s: switch %s is not configured (give setting switch.%s.address and secret switch.%s.password)",
			Name, name, name, name)
	}
	return e, nil
}

// ConfigurePorts gives each port of n what drivers.PortPlan says for
// phase: per switch, one Get, then one Set of what differs (none when
// nothing does).
func (d *Driver) ConfigurePorts(ctx context.Context, n drivers.Node, phase drivers.Phase) (drivers.Result, error) {
	if err := ctx.Err(); err != nil {
		return drivers.Result{}, err
	}
	plan, err := drivers.PortPlan(n, phase)
	if err != nil {
		return drivers.Result{}, err
	}
	groups := drivers.GroupBySwitch(plan)
	for _, g := range groups {
		if _, err := d.endpoint(g.Switch); err != nil {
			return drivers.Result{}, err
		}
	}
	var said []string
	for _, g := range groups {
		msg, err := d.configureSwitch(ctx, d.switches[g.Switch], n.Name, phase, g.Ports)
		if err != nil {
			return drivers.Result{}, err
		}
		said = append(said, msg)
	}
	if len(said) == 0 {
		return drivers.Done("%s: node %s has no cabled port to configure for %s", Name, n.Name, phase), nil
	}
	return drivers.Done("%s: %s ports of %s: %s", Name, phase, n.Name, strings.Join(said, "; ")), nil
}

// configureSwitch reads the switch and sets what differs from want.
func (d *Driver) configureSwitch(ctx context.Context, e *endpoint, node string, phase drivers.Phase, want []drivers.PortConfig) (string, error) {
	unlock, err := e.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	var ports, lags []string
	for _, c := range want {
		ports = append(ports, c.Port)
		if c.LAG != "" && !slices.Contains(lags, lagInterface(node, c.LAG)) {
			lags = append(lags, lagInterface(node, c.LAG))
		}
	}
	cur, err := d.read(ctx, e, ports, lags, true, false)
	if err != nil {
		return "", err
	}
	req, changed, err := changes(e, cur, node, want)
	if err != nil {
		return "", err
	}
	if req == nil {
		return fmt.Sprintf("switch %s: %s already as planned", e.Name, portNames(want)), nil
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	rctx, cancel := d.rpcContext(ctx, e)
	defer cancel()
	if _, err := e.client.Set(rctx, req); err != nil {
		return "", e.setError(ctx, err, node, phase, want)
	}
	return fmt.Sprintf("switch %s: set %s (%d operations)", e.Name, strings.Join(changed, ", "), len(req.Delete)+len(req.Replace)+len(req.Update)), nil
}

// lagInterface names the LAG interface of a node's bond on a switch:
// unique per node, since the design's LAG name (the node's interface,
// e.g. bond0) repeats on every node.
func lagInterface(node, lag string) string { return node + "-" + lag }

// changes builds the SetRequest that makes cur what want says (nil when
// it already is) and names what it changes.
func changes(e *endpoint, cur *switchState, node string, want []drivers.PortConfig) (*gpb.SetRequest, []string, error) {
	b := &setBuilder{req: &gpb.SetRequest{Prefix: &gpb.Path{Target: e.target}}}
	var changed []string
	lags := map[string]drivers.PortConfig{}
	var lagOrder []string
	for _, c := range want {
		got := cur.port(c.SwitchPort)
		if !got.Found {
			return nil, nil, drivers.Errorf(drivers.Permanent, "%s: switch %s has no port %s (node %s interface %s, NIC %s); check the design's cabling",
				Name, e.Name, c.Port, node, c.Interface, c.Alias)
		}
		if err := foreignLAG(e, cur, node, c); err != nil {
			return nil, nil, err
		}
		if c.LAG != "" {
			if _, ok := lags[c.LAG]; !ok {
				lagOrder = append(lagOrder, c.LAG)
			}
			lags[c.LAG] = c
		}
		// A member of another node's LAG of the same name (bond0 on
		// every node) reads as this one's: compare the interface.
		otherLAG := c.LAG != "" && cur.ifaces[c.Port].aggregateID != lagInterface(node, c.LAG)
		if otherLAG || !c.Equal(got.PortConfig) {
			b.port(c, node, got)
			changed = append(changed, c.Port)
		}
	}
	for _, lag := range lagOrder {
		if err := ownLAG(e, cur, node, lag); err != nil {
			return nil, nil, err
		}
		if b.lag(cur, lags[lag], node) {
			changed = append(changed, lagInterface(node, lag))
		}
	}
	vlans := b.vlans(cur, want)
	if len(b.req.Delete)+len(b.req.Replace)+len(b.req.Update) == 0 {
		return nil, nil, nil
	}
	if vlans != "" {
		changed = append(changed, vlans)
	}
	return b.req, changed, nil
}

// setBuilder collects a SetRequest's operations.
type setBuilder struct{ req *gpb.SetRequest }

func ifPath(name string, rest ...string) *gpb.Path {
	p := &gpb.Path{Elem: []*gpb.PathElem{{Name: "interfaces"}, {Name: "interface", Key: map[string]string{"name": name}}}}
	for _, r := range rest {
		p.Elem = append(p.Elem, &gpb.PathElem{Name: r})
	}
	return p
}

func jsonVal(v any) *gpb.TypedValue {
	b, _ := json.Marshal(v) // maps of strings, numbers and booleans always marshal
	return &gpb.TypedValue{Value: &gpb.TypedValue_JsonIetfVal{JsonIetfVal: b}}
}

func (b *setBuilder) update(p *gpb.Path, v any) {
	b.req.Update = append(b.req.Update, &gpb.Update{Path: p, Val: jsonVal(v)})
}

func (b *setBuilder) replace(p *gpb.Path, v any) {
	b.req.Replace = append(b.req.Replace, &gpb.Update{Path: p, Val: jsonVal(v)})
}

// switchedVLAN is the openconfig-vlan switched-vlan config of c.
func switchedVLAN(c drivers.PortConfig) map[string]any {
	if c.Mode == drivers.ModeTrunk {
		sv := map[string]any{"interface-mode": "TRUNK", "trunk-vlans": c.Trunk}
		if c.Trunk == nil {
			sv["trunk-vlans"] = []int{}
		}
		if c.VLAN != 0 {
			sv["native-vlan"] = c.VLAN
		}
		return sv
	}
	return map[string]any{"interface-mode": "ACCESS", "access-vlan": c.VLAN}
}

// port sets a member port: admin state and MTU, its switched VLANs
// (replaced whole), its LAG membership.
func (b *setBuilder) port(c drivers.PortConfig, node string, got drivers.PortState) {
	cfg := map[string]any{"name": c.Port, "enabled": c.Enabled}
	if c.MTU != 0 {
		cfg["mtu"] = c.MTU
	} else if got.MTU != 0 {
		b.req.Delete = append(b.req.Delete, ifPath(c.Port, "config", "mtu"))
	}
	b.update(ifPath(c.Port, "config"), cfg)
	b.replace(ifPath(c.Port, "ethernet", "switched-vlan", "config"), switchedVLAN(c))
	switch {
	case c.LAG != "":
		b.update(ifPath(c.Port, "ethernet", "config"), map[string]any{"openconfig-if-aggregate:aggregate-id": lagInterface(node, c.LAG)})
	case got.LAG != "":
		b.req.Delete = append(b.req.Delete, ifPath(c.Port, "ethernet", "config", "aggregate-id"))
	}
}

// foreignLAG refuses to pull port c out of a LAG interface Slipway did
// not make (no slipway: description: an operator's), as the ovs driver
// refuses to regroup a bond made by hand.
func foreignLAG(e *endpoint, cur *switchState, node string, c drivers.PortConfig) error {
	agg := cur.ifaces[c.Port].aggregateID
	lag := cur.ifaces[agg]
	if agg == "" || lag == nil || strings.HasPrefix(lag.description, lagDescription) {
		return nil
	}
	return drivers.Errorf(drivers.Permanent, "%s: switch %s: port %s (node %s, NIC %s) is a member of %s, which Slipway did not make: "+
		"take the port out of it on the switch (delete its ethernet/config/aggregate-id) or fix the design's cabling, then apply again",
		Name, e.Name, c.Port, node, c.Alias, agg)
}

// ownLAG refuses to take over an interface the switch has under the
// name of the node's LAG that the driver did not make for this node and
// LAG (its description says whose it is): an operator's, or another
// node's whose name and LAG join to the same string.
func ownLAG(e *endpoint, cur *switchState, node, lag string) error {
	name := lagInterface(node, lag)
	got := cur.ifaces[name]
	if got == nil || got.description == lagDescription+node+"/"+lag {
		return nil
	}
	return drivers.Errorf(drivers.Permanent, "%s: switch %s already has an interface %s that Slipway did not make for node %s's %s (its description: %q); "+
		"rename or remove it on the switch, or rename the node's bond in the design, then apply again",
		Name, e.Name, name, node, lag, drivers.PeerText(got.description, e.Password.Reveal()))
}

// lag creates or corrects the LAG interface of c.LAG and its LACP
// configuration; it reports whether it changed anything.
func (b *setBuilder) lag(cur *switchState, c drivers.PortConfig, node string) bool {
	name := lagInterface(node, c.LAG)
	lagType := "STATIC"
	if c.LACP != "" {
		lagType = "LACP"
	}
	descr := lagDescription + node + "/" + c.LAG
	got := cur.ifaces[name]
	sv := switchedVLAN(c)
	wantSV := &ifState{mode: strings.ToUpper(c.Mode), access: c.VLAN, native: c.VLAN, trunk: c.Trunk}
	same := got != nil && got.isLAG && got.lagType == lagType && got.description == descr && got.mtu == c.MTU &&
		got.enabled && sameVLANs(got, wantSV)
	changed := false
	if !same {
		cfg := map[string]any{"name": name, "type": "iana-if-type:ieee8023adLag", "enabled": true, "description": descr}
		if c.MTU != 0 {
			cfg["mtu"] = c.MTU
		} else if got != nil && got.mtu != 0 {
			b.req.Delete = append(b.req.Delete, ifPath(name, "config", "mtu"))
		}
		b.update(ifPath(name), map[string]any{"name": name, "config": cfg,
			"openconfig-if-aggregate:aggregation": map[string]any{"config": map[string]any{"lag-type": lagType}}})
		b.replace(ifPath(name, "aggregation", "switched-vlan", "config"), sv)
		changed = true
	}
	lp := &gpb.Path{Elem: []*gpb.PathElem{{Name: "lacp"}, {Name: "interfaces"}, {Name: "interface", Key: map[string]string{"name": name}}}}
	l, has := cur.lacp[name]
	switch {
	case c.LACP != "" && (l.interval != strings.ToUpper(c.LACPRate) || l.mode != strings.ToUpper(c.LACP)):
		b.update(lp, map[string]any{"name": name, "config": map[string]any{"name": name,
			"interval": strings.ToUpper(c.LACPRate), "lacp-mode": strings.ToUpper(c.LACP)}})
		changed = true
	case c.LACP == "" && has:
		b.req.Delete = append(b.req.Delete, lp)
		changed = true
	}
	return changed
}

func sameVLANs(got, want *ifState) bool {
	if got.mode != want.mode {
		return false
	}
	if want.mode == "TRUNK" {
		return got.native == want.native && slices.Equal(slices.DeleteFunc(slices.Clone(got.trunk), func(v int) bool { return v == got.native }), want.trunk)
	}
	return got.access == want.access
}

// vlans creates the VLANs want's ports carry that the switch lacks; it
// names them ("" none).
func (b *setBuilder) vlans(cur *switchState, want []drivers.PortConfig) string {
	var missing []int
	for _, c := range want {
		for _, v := range c.VLANs() {
			if !cur.vlans[v] && !slices.Contains(missing, v) {
				missing = append(missing, v)
			}
		}
	}
	slices.Sort(missing)
	names := make([]string, len(missing))
	for i, v := range missing {
		id := strconv.Itoa(v)
		p := &gpb.Path{Elem: slices.Concat(pathVLANs, []*gpb.PathElem{{Name: "vlan", Key: map[string]string{"vlan-id": id}}})}
		b.update(p, map[string]any{"vlan-id": v, "config": map[string]any{"vlan-id": v, "name": "slipway-" + id}})
		names[i] = id
	}
	if len(names) == 0 {
		return ""
	}
	return "created VLAN " + strings.Join(names, ", ")
}
