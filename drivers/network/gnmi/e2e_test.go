package gnmi_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	gnmidrv "github.com/slipway-dev/slipway/drivers/network/gnmi"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	simgnmi "github.com/slipway-dev/slipway/sim/gnmi"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestEngineDeploysThroughGNMI: the engine deploys and destroys a node
// of the example, with a fabric, in the lab with the gnmi driver against
// the lab's gNMI target; the target's own state has the node's ports as
// planned for production after the deploy and in quarantine after the
// destroy, and a port no node is cabled to untouched.
func TestEngineDeploysThroughGNMI(t *testing.T) {
	d := designtest.Example(t)
	tg, err := simgnmi.Start(simgnmi.Config{Username: testUser, Password: testPassword, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	switches := designtest.Fabric(d, gnmidrv.Name, func(string) string { return tg.Addr() })
	settings, secrets := map[string]string{}, map[string]drivers.Secret{}
	for _, sw := range switches {
		drivers.SwitchSettings(drivers.SwitchEndpoint{Name: sw, Address: tg.Addr(), Username: testUser,
			Password: drivers.NewSecret(testPassword)}, settings, secrets)
	}
	drv, err := gnmidrv.Open(drivers.Config{Settings: settings, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drv.Close)
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: 0.001, Seed: 7,
		Tune: func(c *orchestrator.Config) { c.Drivers.Network = drv }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	if err := env.Lab.SeedGNMI(tg); err != nil {
		t.Fatal(err)
	}
	if err := tg.AddSwitch(switches[0], "unowned"); err != nil {
		t.Fatal(err)
	}
	e, err := env.Engine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	node := cabledNode(t, d)
	submit(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"})
	submit(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: onlyNode(node)})
	targetHasPlan(t, tg, d, node, drivers.PhaseProduction)
	driftAndRepair(t, e, tg, d, node)
	submit(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test", Filter: onlyNode(node)})
	targetHasPlan(t, tg, d, node, drivers.PhaseQuarantine)
	if p, err := tg.Port(switches[0], "unowned"); err != nil || p.AccessVLAN != 1 || p.MTU != 0 || p.AggregateID != "" {
		t.Errorf("the unowned port: %+v, %v; want untouched", p, err)
	}
}

// driftAndRepair changes one of node's ports at the switch: the
// engine's reconciliation reports switchport drift naming it, and its
// repair puts the port back as planned, on the switch's own state.
func driftAndRepair(t *testing.T, e *orchestrator.Engine, tg *simgnmi.Target, d *design.Design, node string) {
	t.Helper()
	key := node + "/" + string(record.DriftSwitchport)
	if open := switchportDrift(t, e); open[key] {
		t.Fatalf("switchport drift of %s after a clean deploy", node)
	}
	plan, err := driverspec.Ports(d, d.Nodes[node], drivers.PhaseProduction)
	if err != nil {
		t.Fatal(err)
	}
	c := plan[0]
	if err := tg.Tamper(c.Switch, "/interfaces/interface[name="+c.Port+"]/ethernet/switched-vlan/config",
		`{"interface-mode": "ACCESS", "access-vlan": 999}`); err != nil {
		t.Fatal(err)
	}
	if open := switchportDrift(t, e); !open[key] {
		t.Fatalf("%s changed at the switch: no switchport drift of %s", c.SwitchPort, node)
	}
	sets := tg.Stats(c.Switch).Sets
	if _, err := e.ResolveDrift(t.Context(), node, record.DriftSwitchport, record.ResolveRepair, "test", ""); err != nil {
		t.Fatal(err)
	}
	checkPort(t, tg, "repair", c)
	if tg.Stats(c.Switch).Sets == sets {
		t.Error("the repair sent no Set to the switch")
	}
	if open := switchportDrift(t, e); open[key] {
		t.Errorf("switchport drift of %s after the repair", node)
	}
}

// switchportDrift runs reconciliation: the open switchport drift by
// node/kind.
func switchportDrift(t *testing.T, e *orchestrator.Engine) map[string]bool {
	t.Helper()
	rep, err := e.Reconcile(t.Context(), "test")
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for _, r := range rep.Records {
		if r.Kind == record.DriftSwitchport {
			open[r.Node+"/"+string(r.Kind)] = true
		}
	}
	return open
}

func cabledNode(t *testing.T, d *design.Design) string {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(d.Nodes)) {
		if len(d.Nodes[name].Spec.Cabling) > 0 {
			return name
		}
	}
	t.Fatal("the example cables no node")
	return ""
}

func onlyNode(name string) record.Filter {
	return record.Filter{Sets: []design.NodeFilter{{Names: []string{name}}}}
}

func submit(t *testing.T, e *orchestrator.Engine, req record.Request) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	task, err := e.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	task, res, err := e.Task(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != record.TaskSucceeded {
		for _, r := range res {
			t.Logf("%s: %s at %s: %s", r.Node, r.Outcome, r.Stage, r.Reason)
		}
		t.Fatalf("%s: %s (%s)", req.Action, task.Status, task.Message)
	}
}

// targetHasPlan compares the target's own ports with the node's plan.
func targetHasPlan(t *testing.T, tg *simgnmi.Target, d *design.Design, node string, phase drivers.Phase) {
	t.Helper()
	plan, err := driverspec.Ports(d, d.Nodes[node], phase)
	if err != nil || len(plan) == 0 {
		t.Fatalf("%s: %d ports planned for %s (%v)", node, len(plan), phase, err)
	}
	for _, c := range plan {
		checkPort(t, tg, phase, c)
		if p, _ := tg.Port(c.Switch, c.Port); !p.OperUp {
			t.Errorf("%s: %s is down on the switch", phase, c.SwitchPort)
		}
	}
	var words []string
	for _, c := range plan {
		words = append(words, c.String())
	}
	t.Logf("%s %s: %s as planned on the target", node, phase, strings.Join(words, ", "))
}
