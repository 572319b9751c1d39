// Package drivermetrics wraps the engine's drivers to export each call's
// latency and error class to Prometheus:
// slipway_driver_call_duration_seconds{kind,method} and
// slipway_driver_errors_total{kind,method,class}.
package drivermetrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
)

// Metrics holds the collectors.
type Metrics struct {
	latency *prometheus.HistogramVec
	errors  *prometheus.CounterVec
}

// New registers the collectors.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "slipway_driver_call_duration_seconds",
			Help:    "Driver call latency by driver kind and method.",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"kind", "method"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_driver_errors_total",
			Help: "Driver call errors by driver kind, method and error class."}, []string{"kind", "method", "class"}),
	}
	reg.MustRegister(m.latency, m.errors)
	return m
}

func (m *Metrics) observe(kind, method string, start time.Time, err error) {
	m.latency.WithLabelValues(kind, method).Observe(time.Since(start).Seconds())
	if err != nil {
		m.errors.WithLabelValues(kind, method, string(drivers.Classify(err))).Inc()
	}
}

// Wrap returns the drivers with every call measured (nil drivers stay nil).
func (m *Metrics) Wrap(d orchestrator.Drivers) orchestrator.Drivers {
	out := d
	if d.OOB != nil {
		out.OOB = wrapOOB(d.OOB, m)
	}
	if d.Server != nil {
		out.Server = wrapServer(d.Server, m)
	}
	if d.Network != nil {
		out.Network = network{d.Network, m}
	}
	return out
}

// wrapOOB measures d's calls, keeping the optional interfaces it has
// (a console, BIOS settings): the engine finds them by type assertion.
func wrapOOB(d drivers.OOB, m *Metrics) drivers.OOB {
	o := oob{d, m}
	_, console := d.(drivers.OOBConsole)
	_, bios := d.(drivers.OOBBIOS)
	switch {
	case console && bios:
		return oobConsoleBIOS{oobConsole{o}, oobBIOS{o}}
	case console:
		return oobConsole{o}
	case bios:
		return oobBIOS{o}
	}
	return o
}

// oobConsole is an OOB driver with a console; the console is not
// measured (a session lasts as long as an operator keeps it).
type oobConsole struct{ oob }

func (o oobConsole) Console(ctx context.Context, b drivers.BMC, io drivers.ConsoleIO) error {
	return o.d.(drivers.OOBConsole).Console(ctx, b, io)
}

// oobBIOS is an OOB driver with BIOS settings.
type oobBIOS struct{ oob }

func (o oobBIOS) BIOSAttributes(ctx context.Context, b drivers.BMC) (a map[string]string, err error) {
	defer func(t time.Time) { o.m.observe(drivers.KindOOB, "BIOSAttributes", t, err) }(time.Now())
	return o.d.(drivers.OOBBIOS).BIOSAttributes(ctx, b)
}

func (o oobBIOS) ApplyBIOS(ctx context.Context, b drivers.BMC, want map[string]string) (r drivers.Result, err error) {
	defer func(t time.Time) { o.m.observe(drivers.KindOOB, "ApplyBIOS", t, err) }(time.Now())
	return o.d.(drivers.OOBBIOS).ApplyBIOS(ctx, b, want)
}

// oobConsoleBIOS has both (the OOB methods through the console's half).
type oobConsoleBIOS struct {
	oobConsole
	bios oobBIOS
}

func (o oobConsoleBIOS) BIOSAttributes(ctx context.Context, b drivers.BMC) (map[string]string, error) {
	return o.bios.BIOSAttributes(ctx, b)
}

func (o oobConsoleBIOS) ApplyBIOS(ctx context.Context, b drivers.BMC, want map[string]string) (drivers.Result, error) {
	return o.bios.ApplyBIOS(ctx, b, want)
}

type oob struct {
	d drivers.OOB
	m *Metrics
}

func (o oob) Probe(ctx context.Context, b drivers.BMC) (i drivers.BMCInfo, err error) {
	defer func(t time.Time) { o.m.observe(drivers.KindOOB, "Probe", t, err) }(time.Now())
	return o.d.Probe(ctx, b)
}

func (o oob) PowerStatus(ctx context.Context, b drivers.BMC) (s drivers.PowerState, err error) {
	defer func(t time.Time) { o.m.observe(drivers.KindOOB, "PowerStatus", t, err) }(time.Now())
	return o.d.PowerStatus(ctx, b)
}

func (o oob) PowerOn(ctx context.Context, b drivers.BMC) (r drivers.Result, err error) {
	defer func(t time.Time) { o.m.observe(drivers.KindOOB, "PowerOn", t, err) }(time.Now())
	return o.d.PowerOn(ctx, b)
}

func (o oob) PowerOff(ctx context.Context, b drivers.BMC) (r drivers.Result, err error) {
	defer func(t time.Time) { o.m.observe(drivers.KindOOB, "PowerOff", t, err) }(time.Now())
	return o.d.PowerOff(ctx, b)
}

func (o oob) PowerCycle(ctx context.Context, b drivers.BMC) (r drivers.Result, err error) {
	defer func(t time.Time) { o.m.observe(drivers.KindOOB, "PowerCycle", t, err) }(time.Now())
	return o.d.PowerCycle(ctx, b)
}

func (o oob) SetBootDevice(ctx context.Context, b drivers.BMC, dev drivers.BootDevice) (r drivers.Result, err error) {
	defer func(t time.Time) { o.m.observe(drivers.KindOOB, "SetBootDevice", t, err) }(time.Now())
	return o.d.SetBootDevice(ctx, b, dev)
}

// machineRepairer is the optional repair of a deployed machine (the
// engine's reconcile and as-built stages look for it).
type machineRepairer interface {
	RepairMachine(ctx context.Context, n drivers.Node, parts []string) (drivers.Result, error)
}

// wrapServer measures d's calls, keeping RepairMachine and the
// read-only planner (drivers.ServerPlanner) when d has them.
func wrapServer(d drivers.Server, m *Metrics) drivers.Server {
	_, repairs := d.(machineRepairer)
	_, plans := d.(drivers.ServerPlanner)
	switch {
	case repairs && plans:
		return repairingPlanningServer{planningServer{server{d, m}}}
	case repairs:
		return repairingServer{server{d, m}}
	case plans:
		return planningServer{server{d, m}}
	}
	return server{d, m}
}

type repairingServer struct{ server }

func (s repairingServer) RepairMachine(ctx context.Context, n drivers.Node, parts []string) (drivers.Result, error) {
	return s.repair(ctx, n, parts)
}

func (s server) repair(ctx context.Context, n drivers.Node, parts []string) (r drivers.Result, err error) {
	defer func(t time.Time) { s.obs("RepairMachine", t, err) }(time.Now())
	return s.d.(machineRepairer).RepairMachine(ctx, n, parts)
}

type planningServer struct{ server }

func (s planningServer) PlanNodes(ctx context.Context, nodes []drivers.Node) (p []drivers.MachinePlan, err error) {
	defer func(t time.Time) { s.obs("PlanNodes", t, err) }(time.Now())
	return s.d.(drivers.ServerPlanner).PlanNodes(ctx, nodes)
}

func (s planningServer) PlanSite(ctx context.Context, site drivers.SiteSpec) (c []drivers.PlannedChange, err error) {
	defer func(t time.Time) { s.obs("PlanSite", t, err) }(time.Now())
	return s.d.(drivers.ServerPlanner).PlanSite(ctx, site)
}

type repairingPlanningServer struct{ planningServer }

func (s repairingPlanningServer) RepairMachine(ctx context.Context, n drivers.Node, parts []string) (drivers.Result, error) {
	return s.repair(ctx, n, parts)
}

type server struct {
	d drivers.Server
	m *Metrics
}

func (s server) obs(method string, t time.Time, err error) {
	s.m.observe(drivers.KindServer, method, t, err)
}

func (s server) ProbeSite(ctx context.Context) (i drivers.SiteInfo, err error) {
	defer func(t time.Time) { s.obs("ProbeSite", t, err) }(time.Now())
	return s.d.ProbeSite(ctx)
}

func (s server) PrepareSite(ctx context.Context, site drivers.SiteSpec) (r drivers.Result, err error) {
	defer func(t time.Time) { s.obs("PrepareSite", t, err) }(time.Now())
	return s.d.PrepareSite(ctx, site)
}

func (s server) IdentifyNode(ctx context.Context, n drivers.Node) (m drivers.Machine, r drivers.Result, err error) {
	defer func(t time.Time) { s.obs("IdentifyNode", t, err) }(time.Now())
	return s.d.IdentifyNode(ctx, n)
}

func (s server) Commission(ctx context.Context, n drivers.NodeRef) (r drivers.Result, err error) {
	defer func(t time.Time) { s.obs("Commission", t, err) }(time.Now())
	return s.d.Commission(ctx, n)
}

func (s server) ApplyNetworking(ctx context.Context, n drivers.Node) (r drivers.Result, err error) {
	defer func(t time.Time) { s.obs("ApplyNetworking", t, err) }(time.Now())
	return s.d.ApplyNetworking(ctx, n)
}

func (s server) ApplyStorage(ctx context.Context, n drivers.Node) (r drivers.Result, err error) {
	defer func(t time.Time) { s.obs("ApplyStorage", t, err) }(time.Now())
	return s.d.ApplyStorage(ctx, n)
}

func (s server) ApplyPlatform(ctx context.Context, n drivers.Node) (r drivers.Result, err error) {
	defer func(t time.Time) { s.obs("ApplyPlatform", t, err) }(time.Now())
	return s.d.ApplyPlatform(ctx, n)
}

func (s server) Deploy(ctx context.Context, n drivers.Node, dep drivers.Deployment) (r drivers.Result, err error) {
	defer func(t time.Time) { s.obs("Deploy", t, err) }(time.Now())
	return s.d.Deploy(ctx, n, dep)
}

func (s server) Release(ctx context.Context, n drivers.NodeRef, erase drivers.Erase) (r drivers.Result, err error) {
	defer func(t time.Time) { s.obs("Release", t, err) }(time.Now())
	return s.d.Release(ctx, n, erase)
}

func (s server) Status(ctx context.Context, nodes []drivers.NodeRef) (ms []drivers.Machine, err error) {
	defer func(t time.Time) { s.obs("Status", t, err) }(time.Now())
	return s.d.Status(ctx, nodes)
}

func (s server) Owned(ctx context.Context) (ms []drivers.Machine, err error) {
	defer func(t time.Time) { s.obs("Owned", t, err) }(time.Now())
	return s.d.Owned(ctx)
}

func (s server) Inventory(ctx context.Context, n drivers.Node) (inv drivers.Inventory, err error) {
	defer func(t time.Time) { s.obs("Inventory", t, err) }(time.Now())
	return s.d.Inventory(ctx, n)
}

func (s server) Recover(ctx context.Context, n drivers.NodeRef, a drivers.Recovery) (r drivers.Result, err error) {
	defer func(t time.Time) { s.obs("Recover", t, err) }(time.Now())
	return s.d.Recover(ctx, n, a)
}

// SiteImages is the boot images of a Site's driver behind (see
// drivers.ImagesAt); their calls are not measured here.
func (s server) SiteImages(ctx context.Context, site string) (drivers.ServerImages, error) {
	return drivers.ImagesAt(ctx, s.d, site)
}

// SiteChanges is the changes reader of a Site's driver behind (see
// drivers.ChangesAt), its calls measured as method Changes.
func (s server) SiteChanges(ctx context.Context, site string) (drivers.ServerChanges, bool) {
	ch, ok := drivers.ChangesAt(ctx, s.d, site)
	if !ok {
		return nil, false
	}
	return changes{ch: ch, s: s}, true
}

type changes struct {
	ch drivers.ServerChanges
	s  server
}

func (c changes) Changes(ctx context.Context, cursor string) (out drivers.Changes, err error) {
	defer func(t time.Time) { c.s.obs("Changes", t, err) }(time.Now())
	return c.ch.Changes(ctx, cursor)
}

type network struct {
	d drivers.Network
	m *Metrics
}

func (n network) Probe(ctx context.Context) (i drivers.NetworkInfo, err error) {
	defer func(t time.Time) { n.m.observe(drivers.KindNetwork, "Probe", t, err) }(time.Now())
	return n.d.Probe(ctx)
}

func (n network) ConfigurePorts(ctx context.Context, node drivers.Node, p drivers.Phase) (r drivers.Result, err error) {
	defer func(t time.Time) { n.m.observe(drivers.KindNetwork, "ConfigurePorts", t, err) }(time.Now())
	return n.d.ConfigurePorts(ctx, node, p)
}

// Reader is the read-back side of the driver behind, measured (see
// drivers.ReaderOf): whether there is one follows that driver.
func (n network) Reader() (drivers.NetworkReader, bool) {
	r, ok := drivers.ReaderOf(n.d)
	if !ok {
		return nil, false
	}
	return networkReader{r, n.m}, true
}

type networkReader struct {
	r drivers.NetworkReader
	m *Metrics
}

func (n networkReader) ReadPorts(ctx context.Context, ports []drivers.SwitchPort) (st []drivers.PortState, err error) {
	defer func(t time.Time) { n.m.observe(drivers.KindNetwork, "ReadPorts", t, err) }(time.Now())
	return n.r.ReadPorts(ctx, ports)
}

var (
	_ drivers.OOB             = oob{}
	_ drivers.Server          = server{}
	_ drivers.SiteImager      = server{}
	_ drivers.Network         = network{}
	_ drivers.ReaderUnwrapper = network{}
	_ drivers.NetworkReader   = networkReader{}
)
