package drivermetrics_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/drivermetrics"
)

func TestCallsAreMeasured(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := drivermetrics.New(reg)
	srv := fake.NewServer(fake.Script{FailAt: "Commission", FailClass: drivers.Permanent})
	d := m.Wrap(orchestrator.Drivers{Server: srv})
	if _, err := d.Server.ProbeSite(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Server.Commission(t.Context(), drivers.NodeRef{Name: "n1", MachineID: "m1"}); err == nil {
		t.Fatal("the scripted failure did not happen")
	}
	want := `
# HELP slipway_driver_errors_total Driver call errors by driver kind, method and error class.
# TYPE slipway_driver_errors_total counter
slipway_driver_errors_total{class="permanent",kind="server",method="Commission"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "slipway_driver_errors_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "slipway_driver_call_duration_seconds"); n != 2 {
		t.Fatalf("%d latency series, want 2 (ProbeSite, Commission)", n)
	}
}

// The optional interfaces the engine looks for (a console, BIOS settings,
// repairing a deployed machine) survive the wrapping: under serve every
// driver is wrapped, and these used to be lost (no console, no BIOS, no
// repair for the Site's own OOB type and the server driver).
func TestOptionalInterfacesKept(t *testing.T) {
	m := drivermetrics.New(prometheus.NewRegistry())
	d := m.Wrap(orchestrator.Drivers{OOB: consoleBIOS{}, Server: repairer{fake.NewServer(fake.Script{})}, Network: nil})
	if _, ok := d.OOB.(drivers.OOBConsole); !ok {
		t.Error("the wrapped OOB driver lost its console")
	}
	if _, ok := d.OOB.(drivers.OOBBIOS); !ok {
		t.Error("the wrapped OOB driver lost its BIOS settings")
	}
	if _, ok := d.Server.(interface {
		RepairMachine(context.Context, drivers.Node, []string) (drivers.Result, error)
	}); !ok {
		t.Error("the wrapped server driver lost RepairMachine")
	}
	plain := m.Wrap(orchestrator.Drivers{OOB: plainOOB{}, Server: fake.NewServer(fake.Script{})})
	if _, ok := plain.OOB.(drivers.OOBConsole); ok {
		t.Error("a driver without a console has one once wrapped")
	}
	if _, ok := plain.Server.(interface {
		RepairMachine(context.Context, drivers.Node, []string) (drivers.Result, error)
	}); ok {
		t.Error("a server driver that can't repair can once wrapped")
	}
}

type plainOOB struct{}

func (plainOOB) Probe(context.Context, drivers.BMC) (drivers.BMCInfo, error) {
	return drivers.BMCInfo{}, nil
}
func (plainOOB) PowerStatus(context.Context, drivers.BMC) (drivers.PowerState, error) {
	return drivers.PowerOn, nil
}
func (plainOOB) PowerOn(context.Context, drivers.BMC) (drivers.Result, error) {
	return drivers.Result{}, nil
}
func (plainOOB) PowerOff(context.Context, drivers.BMC) (drivers.Result, error) {
	return drivers.Result{}, nil
}
func (plainOOB) PowerCycle(context.Context, drivers.BMC) (drivers.Result, error) {
	return drivers.Result{}, nil
}
func (plainOOB) SetBootDevice(context.Context, drivers.BMC, drivers.BootDevice) (drivers.Result, error) {
	return drivers.Result{}, nil
}

type consoleBIOS struct{ plainOOB }

func (consoleBIOS) Console(context.Context, drivers.BMC, drivers.ConsoleIO) error { return nil }
func (consoleBIOS) BIOSAttributes(context.Context, drivers.BMC) (map[string]string, error) {
	return nil, nil
}
func (consoleBIOS) ApplyBIOS(context.Context, drivers.BMC, map[string]string) (drivers.Result, error) {
	return drivers.Result{}, nil
}

type repairer struct{ drivers.Server }

func (repairer) RepairMachine(context.Context, drivers.Node, []string) (drivers.Result, error) {
	return drivers.Result{}, nil
}

type planner struct{ drivers.Server }

func (planner) PlanNodes(context.Context, []drivers.Node) ([]drivers.MachinePlan, error) {
	return []drivers.MachinePlan{{Node: "n1"}}, nil
}

func (planner) PlanSite(context.Context, drivers.SiteSpec) ([]drivers.PlannedChange, error) {
	return nil, nil
}

type repairingPlanner struct{ planner }

func (repairingPlanner) RepairMachine(context.Context, drivers.Node, []string) (drivers.Result, error) {
	return drivers.Result{}, nil
}

// TestPlannerKept: the read-only planner (drivers.ServerPlanner) survives
// the wrapping, with or without RepairMachine, and is measured; a driver
// that cannot plan cannot once wrapped.
func TestPlannerKept(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := drivermetrics.New(reg)
	type repairs interface {
		RepairMachine(context.Context, drivers.Node, []string) (drivers.Result, error)
	}
	for _, tc := range []struct {
		name            string
		d               drivers.Server
		plans, repaires bool
	}{
		{"planner", planner{fake.NewServer(fake.Script{})}, true, false},
		{"repairing planner", repairingPlanner{planner{fake.NewServer(fake.Script{})}}, true, true},
		{"repairer", repairer{fake.NewServer(fake.Script{})}, false, true},
		{"neither", repairer{fake.NewServer(fake.Script{})}.Server, false, false},
	} {
		w := m.Wrap(orchestrator.Drivers{Server: tc.d}).Server
		p, plans := w.(drivers.ServerPlanner)
		_, fixes := w.(repairs)
		if plans != tc.plans || fixes != tc.repaires {
			t.Errorf("%s: wrapped plans %v repairs %v, want %v %v", tc.name, plans, fixes, tc.plans, tc.repaires)
		}
		if plans {
			if ps, err := p.PlanNodes(t.Context(), nil); err != nil || len(ps) != 1 {
				t.Errorf("%s: PlanNodes %v %v", tc.name, ps, err)
			}
		}
	}
	if got := testutil.CollectAndCount(reg, "slipway_driver_call_duration_seconds"); got == 0 {
		t.Error("PlanNodes was not measured")
	}
}

// The network driver's read-back side survives the wrapping (the engine
// verifies ports with it, through drivers.ReaderOf), measured; a driver
// that reads nothing stays one.
func TestNetworkReaderKept(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := drivermetrics.New(reg)
	net := fake.NewNetwork(fake.Script{})
	net.AddPorts("leaf-1", "p9")
	d := m.Wrap(orchestrator.Drivers{Network: net})
	r, ok := drivers.ReaderOf(d.Network)
	if !ok {
		t.Fatal("the wrapped network driver lost its ReadPorts")
	}
	st, err := r.ReadPorts(t.Context(), []drivers.SwitchPort{{Switch: "leaf-1", Port: "p9"}})
	if err != nil || len(st) != 1 || !st[0].Found || st[0].VLAN != 1 {
		t.Fatalf("ReadPorts through the wrapper = %+v, %v; want p9 found on VLAN 1 (the fake's)", st, err)
	}
	if n := testutil.CollectAndCount(reg, "slipway_driver_call_duration_seconds"); n != 1 {
		t.Errorf("%d latency series, want 1 (ReadPorts)", n)
	}
	plain := m.Wrap(orchestrator.Drivers{Network: plainNetwork{}})
	if _, ok := drivers.ReaderOf(plain.Network); ok {
		t.Error("a network driver without ReadPorts reads once wrapped")
	}
}

type plainNetwork struct{}

func (plainNetwork) Probe(context.Context) (drivers.NetworkInfo, error) {
	return drivers.NetworkInfo{}, nil
}
func (plainNetwork) ConfigurePorts(context.Context, drivers.Node, drivers.Phase) (drivers.Result, error) {
	return drivers.Done("nothing"), nil
}

// The measured server driver leaves a Site's images reachable
// (drivers.ImagesAt), as the driver behind has them.
func TestWrappedServerKeepsImages(t *testing.T) {
	f := fake.NewServer(fake.Script{})
	d := drivermetrics.New(prometheus.NewRegistry()).Wrap(orchestrator.Drivers{Server: f})
	im, err := drivers.ImagesAt(context.Background(), d.Server, "site-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := im.Images(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Calls()); n != 1 || f.Calls()[0].Method != "Images" {
		t.Errorf("the driver behind saw %+v, want one Images call", f.Calls())
	}
}
