package orchestrator_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
)

// labMachineOf is the lab's MAAS's own view of the node's machine (its
// state and its lifecycle counters), never the engine's records.
func labMachineOf(t *testing.T, env *labrun.Env, hostname string) (maas.MachineState, maas.MachineLifecycle) {
	t.Helper()
	for _, r := range env.Lab.Regions() {
		for _, m := range r.MAAS.Machines() {
			if m.Hostname == hostname {
				return m, r.MAAS.Lifecycle()[m.SystemID]
			}
		}
	}
	t.Fatalf("the lab's MAAS has no machine %s", hostname)
	return maas.MachineState{}, maas.MachineLifecycle{}
}

// TestRedeployRefusedBeforeRelease: a deployed node whose stored data
// became something it cannot deploy with (a RoCE address on a member of
// its bond, stored before the upsert checked it; a site profile naming a
// series the provisioner has no image of) is refused by redeploy before
// its machine is released: the node's result says which node, what and
// the next step, and the lab's MAAS still has the machine Deployed and
// owned, never released.
func TestRedeployRefusedBeforeRelease(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	site := d.Site.Metadata.Name
	gpu := firstGPU(d)
	setProfile(d, gpu, "h100")
	p := profiles{{site, "h100"}: {Name: "h100", Series: "noble", RoCE: true}}
	rc := roce{gpu: {{Interface: "bond0", CIDR: "10.250.0.1/31"}}}
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { c.SiteProfiles, c.RoCE = p, rc })
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite}, record.TaskSucceeded)
	only := record.Filter{Sets: []design.NodeFilter{{Names: []string{gpu}}}}
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: only}, record.TaskSucceeded)
	if m, lc := labMachineOf(t, env, gpu); m.Status != "Deployed" || lc.Releases != 0 {
		t.Fatalf("after the deploy the lab has %s %s, %d releases", gpu, m.Status, lc.Releases)
	}

	for _, c := range []struct {
		what  string
		set   func()
		wants []string
	}{
		{"a RoCE address on a bond's member", func() { rc[gpu] = []driverspec.RoCEAddress{{Interface: "data0", CIDR: "10.250.0.1/31"}} },
			[]string{gpu, "data0", "member of bonded interface bond0", "roce-assignments"}},
		{"a site profile's series without an image", func() {
			rc[gpu] = []driverspec.RoCEAddress{{Interface: "bond0", CIDR: "10.250.0.1/31"}}
			p[[2]string{site, "h100"}] = orchestrator.SiteProfile{Name: "h100", Series: "nosuchseries", RoCE: true}
		}, []string{gpu, "nosuchseries", "retry"}},
	} {
		c.set()
		_, res := run(t, e, record.Request{Action: record.ActionRedeployNodes, Filter: only}, record.TaskFailed)
		if len(res) != 1 || res[0].Outcome != record.OutcomeFailed {
			t.Fatalf("%s: results %+v", c.what, res)
		}
		for _, w := range c.wants {
			if !strings.Contains(res[0].Reason, w) {
				t.Errorf("%s: the node's reason %q does not say %q", c.what, res[0].Reason, w)
			}
		}
		m, lc := labMachineOf(t, env, gpu)
		if m.Status != "Deployed" || !m.Owned() || lc.Releases != 0 || lc.DeployStarts != 1 {
			t.Errorf("%s: the lab's MAAS has %s %s (owned %v) after %d release(s) and %d deploy(s); want Deployed, owned, never released",
				c.what, gpu, m.Status, m.Owned(), lc.Releases, lc.DeployStarts)
		}
	}
}

// silentOOB is an OOB driver whose BMCs stop answering once silent is
// set (a BMC off the network): it answers as inner until then.
type silentOOB struct {
	drivers.OOB
	silent *atomic.Bool
}

func (s silentOOB) down(b drivers.BMC) error {
	return drivers.Errorf(drivers.Transient, "BMC %s:%d: no answer", b.Address, b.Port)
}

func (s silentOOB) Probe(ctx context.Context, b drivers.BMC) (drivers.BMCInfo, error) {
	if s.silent.Load() {
		return drivers.BMCInfo{}, nil
	}
	return s.OOB.Probe(ctx, b)
}

func (s silentOOB) PowerStatus(ctx context.Context, b drivers.BMC) (drivers.PowerState, error) {
	if s.silent.Load() {
		return "", s.down(b)
	}
	return s.OOB.PowerStatus(ctx, b)
}

func (s silentOOB) PowerOn(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	if s.silent.Load() {
		return drivers.Result{}, s.down(b)
	}
	return s.OOB.PowerOn(ctx, b)
}

func (s silentOOB) PowerOff(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	if s.silent.Load() {
		return drivers.Result{}, s.down(b)
	}
	return s.OOB.PowerOff(ctx, b)
}

func (s silentOOB) PowerCycle(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	if s.silent.Load() {
		return drivers.Result{}, s.down(b)
	}
	return s.OOB.PowerCycle(ctx, b)
}

func (s silentOOB) SetBootDevice(ctx context.Context, b drivers.BMC, dev drivers.BootDevice) (drivers.Result, error) {
	if s.silent.Load() {
		return drivers.Result{}, s.down(b)
	}
	return s.OOB.SetBootDevice(ctx, b, dev)
}

// TestRedeployRefusedWhenBMCSilent: a deployed node whose BMC no longer
// answers (on any of its OOB methods) is refused by redeploy before its
// machine is released (the stages after the release need the BMC): the
// node's result names it, its BMC and the next step, and the lab's MAAS
// still has the machine Deployed and owned, never released.
func TestRedeployRefusedWhenBMCSilent(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	node := d.NodeNames()[0]
	silent := &atomic.Bool{}
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) {
		c.Drivers.OOB = silentOOB{OOB: c.Drivers.OOB, silent: silent}
		for typ, drv := range c.Drivers.OOBByType {
			c.Drivers.OOBByType[typ] = silentOOB{OOB: drv, silent: silent}
		}
		c.Retry.Attempts = 2
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite}, record.TaskSucceeded)
	only := record.Filter{Sets: []design.NodeFilter{{Names: []string{node}}}}
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: only}, record.TaskSucceeded)
	silent.Store(true)
	_, res := run(t, e, record.Request{Action: record.ActionRedeployNodes, Filter: only}, record.TaskFailed)
	if len(res) != 1 || !strings.Contains(res[0].Reason, node) || !strings.Contains(res[0].Reason, "does not answer") ||
		!strings.Contains(res[0].Reason, "run the task again") {
		t.Errorf("results %+v", res)
	}
	m, lc := labMachineOf(t, env, node)
	if m.Status != "Deployed" || !m.Owned() || lc.Releases != 0 || lc.DeployStarts != 1 {
		t.Errorf("the lab's MAAS has %s %s (owned %v) after %d release(s) and %d deploy(s); want Deployed, owned, never released",
			node, m.Status, m.Owned(), lc.Releases, lc.DeployStarts)
	}
}

// TestRedeployRerunRefusedBeforeRelease: a rerun (or restart-clean) of a
// redeploy task starts again at its release, and has no preflight of its
// own (its nodes started before): a RoCE address the node can no longer
// carry (stored before the check, or made wrong by a later design) is
// still found before the release. The lab's MAAS has the machine
// Deployed, released once (by the first redeploy) and no more.
func TestRedeployRerunRefusedBeforeRelease(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	site := d.Site.Metadata.Name
	gpu := firstGPU(d)
	setProfile(d, gpu, "h100")
	p := profiles{{site, "h100"}: {Name: "h100", RoCE: true}}
	rc := roce{gpu: {{Interface: "bond0", CIDR: "10.250.0.1/31"}}}
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { c.SiteProfiles, c.RoCE = p, rc })
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite}, record.TaskSucceeded)
	only := record.Filter{Sets: []design.NodeFilter{{Names: []string{gpu}}}}
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: only}, record.TaskSucceeded)
	redeploy, _ := run(t, e, record.Request{Action: record.ActionRedeployNodes, Filter: only}, record.TaskSucceeded)
	rc[gpu] = []driverspec.RoCEAddress{{Interface: "data0", CIDR: "10.250.0.1/31"}}
	for _, v := range []record.Verb{record.VerbRerun, record.VerbRestartClean} {
		res := applyVerb(t, e, redeploy.ID, v, record.TaskFailed)
		r := res[gpu]
		for _, w := range []string{gpu, "releasing", "data0", "member of bonded interface bond0", "not released"} {
			if !strings.Contains(r.Reason, w) {
				t.Errorf("%s: the node's reason %q does not say %q", v, r.Reason, w)
			}
		}
		m, lc := labMachineOf(t, env, gpu)
		if m.Status != "Deployed" || !m.Owned() || lc.Releases != 1 || lc.DeployStarts != 2 {
			t.Errorf("%s: the lab's MAAS has %s %s (owned %v) after %d release(s) and %d deploy(s); want Deployed, owned, released once (by the first redeploy)",
				v, gpu, m.Status, m.Owned(), lc.Releases, lc.DeployStarts)
		}
	}
}

// firstGPU is the first node of d with the compute-gpu host profile.
func firstGPU(d *design.Design) string {
	for _, name := range d.NodeNames() {
		if d.Nodes[name].Spec.HostProfile == "compute-gpu" {
			return name
		}
	}
	return ""
}
