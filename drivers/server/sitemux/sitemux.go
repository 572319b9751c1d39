// Package sitemux is one server driver over several sites: each call
// goes to the driver of the site its node belongs to (one driver
// instance per site, each with its own endpoint and key), under that
// site's own concurrency limit, so a site whose provisioner is slow or
// down holds only its own slots and the other sites go on.
//
// A call finds its site from the node's name (the current design's
// spec.site, through SiteOf), else from the machine ID (remembered from
// every machine a site answered with), else by asking each site for the
// machine. Owned and Status answers carry their site (Machine.Site).
package sitemux

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slipway-dev/slipway/drivers"
)

// DefaultLimit is a site's concurrency limit when its policy sets none.
const DefaultLimit = 32

// Site is one site's driver and limit.
type Site struct {
	Driver drivers.Server
	Limit  int // calls at once (0: DefaultLimit)
}

// Server routes calls to the sites' drivers.
type Server struct {
	sites  map[string]*site
	names  []string
	siteOf func(node string) (string, bool)

	mu       sync.Mutex
	machines map[string]string // machine ID -> site

	calls    *prometheus.CounterVec // by site and outcome
	inFlight *prometheus.GaugeVec   // by site
}

// Metrics are the per-site metrics; servers built again over changed
// sites share them (NewWith), so they are registered once.
type Metrics struct {
	calls    *prometheus.CounterVec
	inFlight *prometheus.GaugeVec
}

// NewMetrics makes the per-site metrics.
func NewMetrics() *Metrics {
	return &Metrics{calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_site_calls_total",
		Help: "Server driver calls by site and outcome (ok, error)."}, []string{"site", "outcome"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "slipway_site_calls_in_flight",
			Help: "Server driver calls running at a site now (at most its limit)."}, []string{"site"})}
}

// Collectors are the metrics, to register with the server's.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.calls, m.inFlight}
}

type site struct {
	name     string
	drv      drivers.Server
	sem      chan struct{}
	calls    *prometheus.CounterVec // curried with the site
	inFlight prometheus.Gauge
}

var _ drivers.Server = (*Server)(nil)

// New returns the server over sites (by name); siteOf names a node's site
// from the current design (false: the node is not in it).
func New(sites map[string]Site, siteOf func(node string) (string, bool)) (*Server, error) {
	return NewWith(sites, siteOf, NewMetrics())
}

// NewWith is New counting in m.
func NewWith(sites map[string]Site, siteOf func(node string) (string, bool), m *Metrics) (*Server, error) {
	if len(sites) == 0 {
		return nil, errors.New("sitemux: no sites")
	}
	s := &Server{sites: map[string]*site{}, siteOf: siteOf, machines: map[string]string{}, calls: m.calls, inFlight: m.inFlight}
	for name, st := range sites {
		if st.Driver == nil {
			return nil, fmt.Errorf("sitemux: site %s has no driver", name)
		}
		limit := st.Limit
		if limit <= 0 {
			limit = DefaultLimit
		}
		s.sites[name] = &site{name: name, drv: st.Driver, sem: make(chan struct{}, limit),
			calls: s.calls.MustCurryWith(prometheus.Labels{"site": name}), inFlight: s.inFlight.WithLabelValues(name)}
	}
	s.names = slices.Sorted(maps.Keys(s.sites))
	return s, nil
}

// call runs fn on site st under its limit.
func call[T any](ctx context.Context, st *site, fn func(drivers.Server) (T, error)) (T, error) {
	select {
	case st.sem <- struct{}{}:
	case <-ctx.Done():
		var zero T
		return zero, drivers.NewError(drivers.Classify(ctx.Err()), fmt.Errorf("site %s: waiting for a slot of its limit: %w", st.name, ctx.Err()))
	}
	st.inFlight.Inc()
	defer func() { st.inFlight.Dec(); <-st.sem }()
	v, err := fn(st.drv)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	st.calls.WithLabelValues(outcome).Inc()
	return v, err
}

// Collectors are the per-site metrics, to register with the server's.
func (s *Server) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.calls, s.inFlight}
}

// siteFor is the site of a node reference.
func (s *Server) siteFor(ctx context.Context, ref drivers.NodeRef) (*site, error) {
	if len(s.names) == 1 {
		return s.sites[s.names[0]], nil
	}
	if name, ok := s.siteOf(ref.Name); ok {
		if st := s.sites[name]; st != nil {
			return st, nil
		}
		return nil, drivers.Errorf(drivers.Permanent, "node %s belongs to site %s, which this server does not drive (no driver for it: a site added since serve started needs serve restarted)", ref.Name, name)
	}
	if ref.MachineID != "" {
		s.mu.Lock()
		name, ok := s.machines[ref.MachineID]
		s.mu.Unlock()
		if ok {
			return s.sites[name], nil
		}
		return s.locate(ctx, ref)
	}
	return nil, drivers.Errorf(drivers.Permanent, "node %s is in no site of the current design and has no machine: nothing to do at any site", ref.Name)
}

// locate asks each site for the machine.
func (s *Server) locate(ctx context.Context, ref drivers.NodeRef) (*site, error) {
	for _, name := range s.names {
		st := s.sites[name]
		ms, err := call(ctx, st, func(d drivers.Server) ([]drivers.Machine, error) {
			return d.Status(ctx, []drivers.NodeRef{{MachineID: ref.MachineID}})
		})
		if err == nil && len(ms) == 1 && ms[0].MachineID == ref.MachineID {
			s.remember(name, ms)
			return st, nil
		}
	}
	return nil, drivers.Errorf(drivers.Transient, "machine %s of node %s: no site knows it (or a site did not answer)", ref.MachineID, ref.Name)
}

func (s *Server) remember(site string, ms []drivers.Machine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range ms {
		if ms[i].MachineID != "" {
			s.machines[ms[i].MachineID] = site
			ms[i].Site = site
		}
	}
}

// onNode runs fn at the node's site.
func onNode[T any](ctx context.Context, s *Server, ref drivers.NodeRef, fn func(drivers.Server) (T, error)) (T, error) {
	st, err := s.siteFor(ctx, ref)
	if err != nil {
		var zero T
		return zero, err
	}
	return call(ctx, st, fn)
}

// ProbeSite probes every site: reachable and authenticated when all are;
// the images and kernels every site has; each site's version.
func (s *Server) ProbeSite(ctx context.Context) (drivers.SiteInfo, error) {
	var out drivers.SiteInfo
	var versions []string
	for i, name := range s.names {
		info, err := s.ProbeSiteNamed(ctx, name)
		if err != nil {
			return drivers.SiteInfo{}, fmt.Errorf("site %s: %w", name, err)
		}
		versions = append(versions, name+": "+info.Version)
		if i == 0 {
			out = info
			continue
		}
		out = merge(out, info)
	}
	out.Version = strings.Join(versions, ", ")
	return out, nil
}

// ProbeSiteNamed probes one site.
func (s *Server) ProbeSiteNamed(ctx context.Context, name string) (drivers.SiteInfo, error) {
	st := s.sites[name]
	if st == nil {
		return drivers.SiteInfo{}, drivers.Errorf(drivers.Permanent, "no site %s", name)
	}
	return call(ctx, st, func(d drivers.Server) (drivers.SiteInfo, error) { return d.ProbeSite(ctx) })
}

func merge(a, b drivers.SiteInfo) drivers.SiteInfo {
	a.Reachable = a.Reachable && b.Reachable
	a.Authenticated = a.Authenticated && b.Authenticated
	a.BootImages = slices.DeleteFunc(a.BootImages, func(x string) bool { return !slices.Contains(b.BootImages, x) })
	a.Capabilities = slices.DeleteFunc(a.Capabilities, func(x string) bool { return !slices.Contains(b.Capabilities, x) })
	for img, ks := range a.Kernels {
		a.Kernels[img] = slices.DeleteFunc(ks, func(k string) bool { return !slices.Contains(b.Kernels[img], k) })
	}
	a.DHCPSubnets = slices.Compact(slices.Sorted(slices.Values(append(a.DHCPSubnets, b.DHCPSubnets...)))) // where any site serves DHCP
	if a.DefaultOS != b.DefaultOS {
		a.DefaultOS = ""
	}
	if a.DefaultImage != b.DefaultImage {
		a.DefaultImage = ""
	}
	return a
}

// PrepareSite prepares the site spec.Name names (the only site when it
// names none).
func (s *Server) PrepareSite(ctx context.Context, spec drivers.SiteSpec) (drivers.Result, error) {
	name := spec.Name
	if name == "" && len(s.names) == 1 {
		name = s.names[0]
	}
	st := s.sites[name]
	if st == nil {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "prepare site %q: this server drives sites %v", name, s.names)
	}
	return call(ctx, st, func(d drivers.Server) (drivers.Result, error) { return d.PrepareSite(ctx, spec) })
}

// IdentifyNode finds or enlists the node's machine at its site.
func (s *Server) IdentifyNode(ctx context.Context, n drivers.Node) (drivers.Machine, drivers.Result, error) {
	st, err := s.siteFor(ctx, n.NodeRef)
	if err != nil {
		return drivers.Machine{}, drivers.Result{}, err
	}
	type out struct {
		m   drivers.Machine
		res drivers.Result
	}
	o, err := call(ctx, st, func(d drivers.Server) (out, error) {
		m, res, err := d.IdentifyNode(ctx, n)
		return out{m, res}, err
	})
	if o.m.MachineID != "" {
		ms := []drivers.Machine{o.m}
		s.remember(st.name, ms)
		o.m = ms[0]
	}
	return o.m, o.res, err
}

// Commission commissions the node's machine.
func (s *Server) Commission(ctx context.Context, n drivers.NodeRef) (drivers.Result, error) {
	return onNode(ctx, s, n, func(d drivers.Server) (drivers.Result, error) { return d.Commission(ctx, n) })
}

// ApplyNetworking configures the node's interfaces.
func (s *Server) ApplyNetworking(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return onNode(ctx, s, n.NodeRef, func(d drivers.Server) (drivers.Result, error) { return d.ApplyNetworking(ctx, n) })
}

// ApplyStorage configures the node's storage.
func (s *Server) ApplyStorage(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return onNode(ctx, s, n.NodeRef, func(d drivers.Server) (drivers.Result, error) { return d.ApplyStorage(ctx, n) })
}

// ApplyPlatform sets the node's tags, kernel options and owner data.
func (s *Server) ApplyPlatform(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return onNode(ctx, s, n.NodeRef, func(d drivers.Server) (drivers.Result, error) { return d.ApplyPlatform(ctx, n) })
}

// Deploy deploys the node's machine.
func (s *Server) Deploy(ctx context.Context, n drivers.Node, dep drivers.Deployment) (drivers.Result, error) {
	return onNode(ctx, s, n.NodeRef, func(d drivers.Server) (drivers.Result, error) { return d.Deploy(ctx, n, dep) })
}

// Release releases the node's machine.
func (s *Server) Release(ctx context.Context, n drivers.NodeRef, erase drivers.Erase) (drivers.Result, error) {
	return onNode(ctx, s, n, func(d drivers.Server) (drivers.Result, error) { return d.Release(ctx, n, erase) })
}

// Inventory reads the node's machine's hardware.
func (s *Server) Inventory(ctx context.Context, n drivers.Node) (drivers.Inventory, error) {
	return onNode(ctx, s, n.NodeRef, func(d drivers.Server) (drivers.Inventory, error) { return d.Inventory(ctx, n) })
}

// RepairMachine sets the parts of a deployed machine that drifted, through
// its site's driver when that driver can (the engine's reconcile and
// as-built stages); a site whose driver can't is a Permanent error.
func (s *Server) RepairMachine(ctx context.Context, n drivers.Node, parts []string) (drivers.Result, error) {
	return onNode(ctx, s, n.NodeRef, func(d drivers.Server) (drivers.Result, error) {
		fix, ok := d.(interface {
			RepairMachine(context.Context, drivers.Node, []string) (drivers.Result, error)
		})
		if !ok {
			return drivers.Result{}, drivers.Errorf(drivers.Permanent, "the server driver of node %s's site cannot repair a deployed machine; redeploy the node", n.Name)
		}
		return fix.RepairMachine(ctx, n, parts)
	})
}

// Recover runs a recovery action on the node's machine.
func (s *Server) Recover(ctx context.Context, n drivers.NodeRef, action drivers.Recovery) (drivers.Result, error) {
	return onNode(ctx, s, n, func(d drivers.Server) (drivers.Result, error) { return d.Recover(ctx, n, action) })
}

// Status asks each site for its nodes' machines, one call per site, and
// answers in the order asked.
func (s *Server) Status(ctx context.Context, refs []drivers.NodeRef) ([]drivers.Machine, error) {
	bySite := map[*site][]int{}
	for i, ref := range refs {
		st, err := s.siteFor(ctx, ref)
		if err != nil {
			return nil, err
		}
		bySite[st] = append(bySite[st], i)
	}
	out := make([]drivers.Machine, len(refs))
	for st, idx := range bySite {
		part := make([]drivers.NodeRef, len(idx))
		for j, i := range idx {
			part[j] = refs[i]
		}
		ms, err := call(ctx, st, func(d drivers.Server) ([]drivers.Machine, error) { return d.Status(ctx, part) })
		if err != nil {
			return nil, fmt.Errorf("site %s: %w", st.name, err)
		}
		s.remember(st.name, ms)
		for j, i := range idx {
			if j < len(ms) {
				out[i] = ms[j]
			}
		}
	}
	return out, nil
}

// Owned lists every site's machines carrying this orchestrator's marker.
// A site that does not answer fails the call (a partial list would look
// like machines gone).
func (s *Server) Owned(ctx context.Context) ([]drivers.Machine, error) {
	var out []drivers.Machine
	for _, name := range s.names {
		ms, err := call(ctx, s.sites[name], func(d drivers.Server) ([]drivers.Machine, error) { return d.Owned(ctx) })
		if err != nil {
			return nil, fmt.Errorf("site %s: %w", name, err)
		}
		s.remember(name, ms)
		out = append(out, ms...)
	}
	return out, nil
}

var _ drivers.ServerPlanner = (*Server)(nil)

// planner is the driver of a site as a planner, or an error wrapping
// drivers.ErrCannotPlan.
func planner(st *site) (drivers.ServerPlanner, error) {
	p, ok := st.drv.(drivers.ServerPlanner)
	if !ok {
		return nil, fmt.Errorf("site %s: %w", st.name, drivers.ErrCannotPlan)
	}
	return p, nil
}

// PlanNodes asks each site to plan its nodes, one call per site (as
// Status), and answers in the order asked. A node in no site of the
// design and without a machine is not found.
func (s *Server) PlanNodes(ctx context.Context, nodes []drivers.Node) ([]drivers.MachinePlan, error) {
	out := make([]drivers.MachinePlan, len(nodes))
	bySite := map[*site][]int{}
	for i, n := range nodes {
		out[i].Node = n.Name
		st, err := s.siteFor(ctx, n.NodeRef)
		if err != nil {
			if n.MachineID == "" && drivers.Classify(err) == drivers.Permanent {
				continue
			}
			return nil, err
		}
		bySite[st] = append(bySite[st], i)
	}
	for _, name := range s.names {
		st := s.sites[name]
		idx := bySite[st]
		if len(idx) == 0 {
			continue
		}
		p, err := planner(st)
		if err != nil {
			return nil, err
		}
		part := make([]drivers.Node, len(idx))
		for j, i := range idx {
			part[j] = nodes[i]
		}
		plans, err := call(ctx, st, func(drivers.Server) ([]drivers.MachinePlan, error) { return p.PlanNodes(ctx, part) })
		if err != nil {
			return nil, fmt.Errorf("site %s: %w", st.name, err)
		}
		for j, i := range idx {
			if j < len(plans) {
				out[i] = plans[j]
				out[i].Now.Site = name
			}
		}
	}
	return out, nil
}

// PlanSite plans the site spec.Name names (the only site when it names
// none), through its driver.
func (s *Server) PlanSite(ctx context.Context, spec drivers.SiteSpec) ([]drivers.PlannedChange, error) {
	name := spec.Name
	if name == "" && len(s.names) == 1 {
		name = s.names[0]
	}
	st := s.sites[name]
	if st == nil {
		return nil, drivers.Errorf(drivers.Permanent, "plan of site %q: this server drives sites %v", name, s.names)
	}
	p, err := planner(st)
	if err != nil {
		return nil, err
	}
	return call(ctx, st, func(drivers.Server) ([]drivers.PlannedChange, error) { return p.PlanSite(ctx, spec) })
}
