// Package gnmi is the lab's gNMI target: a gRPC server speaking gNMI
// (Capabilities, Get, Set, a ONCE Subscribe) over the OpenConfig state
// of one or more simulated switches: interfaces (admin state, MTU,
// switched VLANs, LAG membership), LAG interfaces, LACP, the VLANs that
// exist, and, read only, each port's link state and LLDP neighbour.
//
// One target serves several switches: a request names its switch in
// its prefix's (or path's) target field; a target of one switch
// answers a request that names none. It listens on loopback, plain TCP
// (clients connect insecure, gnmic --insecure) or TLS when given a
// certificate, and checks the username and password every RPC carries
// as gRPC metadata, as gnmic -u/-p and Slipway's gnmi driver send them.
package gnmi

import (
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// Bounds of what the target takes.
const (
	maxMsgSize   = 4 << 20 // bytes of one gRPC message
	maxPaths     = 256     // paths of one Get, operations of one Set, subscriptions
	maxPathLen   = 4096    // bytes of a path ParsePath reads
	maxPathElems = 32      // elements of one path
	maxDepth     = 32      // nesting of a JSON value
	maxSwitches  = 4096
	maxPorts     = 1024 // ports of one switch
	maxNameLen   = 128  // bytes of a switch or port name
	// DefaultMaxVLAN is the highest VLAN ID a switch carries unless
	// Config says otherwise.
	DefaultMaxVLAN = 4094
)

// Config configures a target.
type Config struct {
	Listen   string // default 127.0.0.1:0
	Username string // required with Password
	Password string
	// MaxVLAN is the highest VLAN ID the switches carry (default
	// DefaultMaxVLAN): a lower one makes a switch that refuses VLANs.
	MaxVLAN int
	// Strict switches refuse a port on a VLAN that is not created.
	Strict bool
	// TLS, when set, serves gNMI over TLS (as real targets do) instead
	// of plain TCP.
	TLS *tls.Config
	Log zerolog.Logger
}

// Neighbor is what a port's LLDP learned of the device cabled to it.
type Neighbor struct {
	ChassisID  string
	SystemName string
	PortID     string
	PortDescr  string
}

// Stats count what one switch's clients asked.
type Stats struct {
	Gets       int // Get RPCs
	Sets       int // Set RPCs accepted
	SetOps     int // their updates, replaces and deletes
	Refused    int // Set RPCs refused (the switch's rules)
	Subscribes int // ONCE subscriptions
	Tampers    int // changes made through the lab API
}

type switchState struct {
	name  string
	tree  map[string]any
	ports map[string]bool
	link  map[string]bool
	stats Stats
}

// Target is a running gNMI target.
type Target struct {
	cfg  Config
	ln   net.Listener
	srv  *grpc.Server
	done chan struct{}

	mu       sync.Mutex
	switches map[string]*switchState
	authFail int
}

// Start listens and serves.
func Start(cfg Config) (*Target, error) {
	if cfg.Username == "" || cfg.Password == "" {
		return nil, errors.New("gnmi target: a username and password are required")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.MaxVLAN <= 0 || cfg.MaxVLAN > DefaultMaxVLAN {
		cfg.MaxVLAN = DefaultMaxVLAN
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("gnmi target: %w", err)
	}
	t := &Target{cfg: cfg, ln: ln, switches: map[string]*switchState{}, done: make(chan struct{})}
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(maxMsgSize), grpc.MaxSendMsgSize(maxMsgSize),
		grpc.UnaryInterceptor(t.unaryAuth), grpc.StreamInterceptor(t.streamAuth)}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	t.srv = grpc.NewServer(opts...)
	gpb.RegisterGNMIServer(t.srv, &service{t: t})
	go func() {
		defer close(t.done)
		if err := t.srv.Serve(ln); err != nil {
			cfg.Log.Debug().Err(err).Msg("gnmi target stopped")
		}
	}()
	return t, nil
}

// Addr is where the target listens (host:port).
func (t *Target) Addr() string { return t.ln.Addr().String() }

// Close stops the target at once (open calls fail): a switch that no
// longer answers.
func (t *Target) Close() {
	t.srv.Stop()
	<-t.done
}

// AddSwitch adds a switch with physical ports (admin up, link down,
// access VLAN 1) and VLAN 1 created; adding ports to a switch that
// exists adds the ports it lacks.
func (t *Target) AddSwitch(name string, ports ...string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("switch name %q: 1 to %d bytes", name, maxNameLen)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.switches[name]
	if s == nil {
		if len(t.switches) >= maxSwitches {
			return fmt.Errorf("more than %d switches", maxSwitches)
		}
		s = newSwitch(name)
		t.switches[name] = s
	}
	for _, p := range ports {
		if p == "" || len(p) > maxNameLen {
			return fmt.Errorf("switch %s: port name %q: 1 to %d bytes", name, p, maxNameLen)
		}
		if s.ports[p] {
			continue
		}
		if len(s.ports) >= maxPorts {
			return fmt.Errorf("switch %s: more than %d ports", name, maxPorts)
		}
		s.ports[p] = true
		ifs, _ := container(s.tree, elems("interfaces"))
		l, _ := ifs["interface"].([]any)
		ifs["interface"] = append(l, newPort(p))
	}
	refreshState(s)
	return nil
}

func newSwitch(name string) *switchState {
	tree := map[string]any{
		"interfaces": map[string]any{"interface": []any{}},
		"network-instances": map[string]any{"network-instance": []any{map[string]any{
			"name": "default", "config": map[string]any{"name": "default"},
			"vlans": map[string]any{"vlan": []any{map[string]any{"vlan-id": float64(1),
				"config": map[string]any{"vlan-id": float64(1), "name": "default"}}}},
		}}},
		"lacp": map[string]any{"interfaces": map[string]any{"interface": []any{}}},
		"lldp": map[string]any{"config": map[string]any{"enabled": true}, "interfaces": map[string]any{"interface": []any{}}},
	}
	return &switchState{name: name, tree: tree, ports: map[string]bool{}, link: map[string]bool{}}
}

func newPort(name string) map[string]any {
	return map[string]any{
		"name":   name,
		"config": map[string]any{"name": name, "type": "iana-if-type:ethernetCsmacd", "enabled": true},
		"ethernet": map[string]any{"config": map[string]any{},
			"switched-vlan": map[string]any{"config": map[string]any{"interface-mode": "ACCESS", "access-vlan": float64(1)}}},
	}
}

// elems makes a path of plain elements.
func elems(names ...string) []*gpb.PathElem {
	out := make([]*gpb.PathElem, len(names))
	for i, n := range names {
		out[i] = &gpb.PathElem{Name: n}
	}
	return out
}

// refreshState writes each interface's state container from its config
// and link: what a switch reports, never what a client sets.
func refreshState(s *switchState) {
	m, err := parseModel(s.tree)
	if err != nil {
		return // the tree was checked before it was kept
	}
	ifs, _ := lookup(s.tree, elems("interfaces", "interface"))
	l, _ := ifs.([]any)
	for _, e := range l {
		obj, _ := e.(map[string]any)
		name, _ := obj["name"].(string)
		im := m.ifaces[name]
		if im == nil {
			continue
		}
		oper := "DOWN"
		if im.enabled && (s.link[name] || im.isLAG && lagUp(m, s, name)) {
			oper = "UP"
		}
		admin := map[bool]string{true: "UP", false: "DOWN"}[im.enabled]
		st := map[string]any{"name": name, "enabled": im.enabled, "admin-status": admin, "oper-status": oper}
		if im.mtu != 0 {
			st["mtu"] = float64(im.mtu)
		}
		obj["state"] = st
	}
}

// lagUp: a LAG is up when a member's link is.
func lagUp(m model, s *switchState, lag string) bool {
	for _, im := range m.ifaces {
		if im.aggregateID == lag && im.enabled && s.link[im.name] {
			return true
		}
	}
	return false
}

// SetNeighbor sets what port's LLDP hears (nil: nothing) and brings its
// link up (down when n is nil): the lab cables a machine's NIC there.
func (t *Target) SetNeighbor(sw, port string, n *Neighbor) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, err := t.port(sw, port)
	if err != nil {
		return err
	}
	e, err := container(s.tree, []*gpb.PathElem{{Name: "lldp"}, {Name: "interfaces"},
		{Name: "interface", Key: map[string]string{"name": port}}})
	if err != nil {
		return err
	}
	e["config"] = map[string]any{"name": port, "enabled": true}
	delete(e, "neighbors")
	if n != nil {
		e["neighbors"] = map[string]any{"neighbor": []any{map[string]any{"id": n.ChassisID,
			"state": map[string]any{"id": n.ChassisID, "chassis-id": n.ChassisID, "chassis-id-type": "MAC_ADDRESS",
				"system-name": n.SystemName, "port-id": n.PortID, "port-id-type": "INTERFACE_NAME",
				"port-description": n.PortDescr}}}}
	}
	s.link[port] = n != nil
	refreshState(s)
	return nil
}

// SetLink sets a port's link (its oper-status when enabled).
func (t *Target) SetLink(sw, port string, up bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, err := t.port(sw, port)
	if err != nil {
		return err
	}
	s.link[port] = up
	refreshState(s)
	return nil
}

func (t *Target) port(sw, port string) (*switchState, error) {
	s := t.switches[sw]
	if s == nil {
		return nil, fmt.Errorf("no switch %s", sw)
	}
	if !s.ports[port] {
		return nil, fmt.Errorf("switch %s has no port %s", sw, port)
	}
	return s, nil
}

// Tamper changes the switch's configuration as someone at its console
// would: value (JSON) merged at path (gnmic's syntax), checked by the
// switch's rules like a Set.
func (t *Target) Tamper(sw, path, value string) error {
	p, err := ParsePath(path)
	if err != nil {
		return err
	}
	v, err := decodeJSON([]byte(value))
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.switches[sw]
	if s == nil {
		return fmt.Errorf("no switch %s", sw)
	}
	next := clone(s.tree).(map[string]any)
	if err := setAt(next, p.GetElem(), v, false); err != nil {
		return err
	}
	next["lldp"] = clone(s.tree["lldp"])
	ensurePorts(s, next)
	if err := t.commit(s, next); err != nil {
		return err
	}
	s.stats.Tampers++
	return nil
}

// commit checks next by the switch's rules and keeps it.
func (t *Target) commit(s *switchState, next map[string]any) error {
	m, err := parseModel(next)
	if err != nil {
		return err
	}
	if err := m.check(s.name, s.ports, t.cfg.MaxVLAN, t.cfg.Strict); err != nil {
		return err
	}
	s.tree = next
	refreshState(s)
	return nil
}

// Switches names the switches, sorted.
func (t *Target) Switches() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.switches))
}

// Stats returns a switch's counters.
func (t *Target) Stats(sw string) Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.switches[sw]; s != nil {
		return s.stats
	}
	return Stats{}
}

// AuthFailures counts RPCs refused for their credentials.
func (t *Target) AuthFailures() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.authFail
}

// selectSwitch finds the switch a request's target names.
func (t *Target) selectSwitch(target string) (*switchState, error) {
	if target == "" {
		if len(t.switches) == 1 {
			for _, s := range t.switches {
				return s, nil
			}
		}
		return nil, fmt.Errorf("name the switch in the request's target (this target serves %d switches)", len(t.switches))
	}
	s := t.switches[target]
	if s == nil {
		return nil, fmt.Errorf("no switch %q on this target", target)
	}
	return s, nil
}
