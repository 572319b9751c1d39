package orchestrator_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
)

// labISO is the provisioner's boot ISO a test profile names (the lab
// boots the ISO a node's profile names into its MAAS).
const labISO = "http://images.lab.example/maas-boot.iso"

// vmediaEvents are the node's events of kind vmedia.
func vmediaEvents(t *testing.T, evs []record.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		if ev.Kind == "vmedia" {
			out = append(out, ev.Message)
		}
	}
	return out
}

// TestVirtualMediaDeploy: a node whose hardware profile has virtualMedia,
// on a lab machine without PXE, deploys: the engine inserts the ISO over
// Redfish, boots the machine once from the CD (into the provisioner:
// enlisted), and ejects the ISO once the provisioner has deployed it.
// Counted from the lab: the machine never PXE-booted, its first boot was
// the ISO into the provisioner, its BMC saw one insert and one eject and
// holds no medium at the end.
func TestVirtualMediaDeploy(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	node := redfishNode(t, d)
	withProfile(d, node, func(hw *design.HardwareProfileSpec) { hw.VirtualMedia = &design.VirtualMediaBoot{ISO: labISO} })
	env := startEnv(t, d, nil, nil, nil)
	m := env.Lab.Machine(node)
	m.SetPXE(false)
	rf := m.Redfish()
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: onlyNodes(node)}, record.TaskSucceeded)
	if st := labStatus(t, env, node).StatusName; st != "Deployed" {
		t.Fatalf("the lab's MAAS has the machine %q", st)
	}
	boots := m.BootLog()
	if len(boots) == 0 || boots[0] != lab.BootFromProvisioner || slices.Contains(boots, lab.BootFromPXE) {
		t.Fatalf("boots %v: want the first from the ISO into the provisioner, none from PXE", boots)
	}
	st := rf.Stats()
	img, in := rf.Media()
	if st.MediaInserted != 1 || st.MediaEjected != 1 || in || img != "" {
		t.Fatalf("the BMC saw %d inserts and %d ejects and holds %q (inserted %v); want one each and nothing", st.MediaInserted, st.MediaEjected, img, in)
	}
	evs, err := e.Events(t.Context(), 0, 0, task.ID, node)
	if err != nil {
		t.Fatal(err)
	}
	got := vmediaEvents(t, evs)
	if len(got) != 2 || !strings.Contains(got[0], "ISO "+labISO+" inserted") || !strings.Contains(got[1], "ISO "+labISO+" ejected") {
		t.Fatalf("vmedia events %q: want the insert, then the eject", got)
	}
	if !slices.ContainsFunc(evs, func(ev record.Event) bool {
		return strings.Contains(ev.Message, "next boot (once) from the virtual CD")
	}) ||
		!slices.ContainsFunc(evs, func(ev record.Event) bool {
			return strings.Contains(ev.Message, "the machine boots from the virtual CD")
		}) {
		t.Error("no events for the one-time CD boot and the power step that boots it")
	}
}

// TestVirtualMediaNeedsADriverThatCan: a profile with virtualMedia whose
// OOB driver cannot attach an ISO (IPMI) fails the node, Permanent,
// naming the profile and the fix; nothing is powered.
func TestVirtualMediaNeedsADriverThatCan(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	node := cancelNode // its profile is managed over IPMI
	if d.Nodes[node].Spec.Hardware.OOB.Type == "redfish" {
		t.Fatalf("%s is managed over Redfish", node)
	}
	withProfile(d, node, func(hw *design.HardwareProfileSpec) { hw.VirtualMedia = &design.VirtualMediaBoot{ISO: labISO} })
	env := startEnv(t, d, nil, nil, nil)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	_, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: onlyNodes(node)}, record.TaskFailed)
	r := res[0]
	prof := d.Nodes[node].Spec.HardwareProfile
	if r.Class != "permanent" || !strings.Contains(r.Reason, "hardware profile "+prof) || !strings.Contains(r.Reason, "cannot attach an ISO") ||
		!strings.Contains(r.Reason, "oob.type redfish") || r.Stage != record.StageOOBPrepare {
		t.Fatalf("result %+v: want a permanent failure at oob_prepare naming %s and the fix", r, prof)
	}
	if m := env.Lab.Machine(node); m.IsPoweredOn() || len(m.BootLog()) != 0 {
		t.Fatalf("the machine was powered (on %v, boots %v)", m.IsPoweredOn(), m.BootLog())
	}
}

// TestVirtualMediaEjectedOnCancel: a deploy cancelled while the
// provisioner commissions the machine (the ISO in) ejects it: the
// lab's BMC holds no medium once the task has ended.
func TestVirtualMediaEjectedOnCancel(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	node := redfishNode(t, d)
	withProfile(d, node, func(hw *design.HardwareProfileSpec) { hw.VirtualMedia = &design.VirtualMediaBoot{ISO: labISO} })
	env := startEnv(t, d, nil, nil, nil)
	m := env.Lab.Machine(node)
	m.SetPXE(false)
	rf := m.Redfish()
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	// Commissioning lasts until the cancel: at the lab's 300 ms it could
	// end between two looks on a loaded machine.
	env.Lab.MAAS.SetDurations(func(d *maas.Durations) { d.Commission, d.NodeTimeout = 1000*time.Hour, 2000*time.Hour })
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Filter: onlyNodes(node), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for labStatus(t, env, node).StatusName != "Commissioning" {
		if got, _, _ := e.Task(t.Context(), task.ID); got.Status.Finished() || time.Now().After(deadline) {
			t.Fatalf("task %s %s: never saw the machine commissioning", task.ID, got.Status)
		}
		time.Sleep(3 * time.Millisecond)
	}
	if _, in := rf.Media(); !in {
		t.Fatal("the ISO is not in while the machine commissions")
	}
	if _, err := e.TaskVerb(t.Context(), task.ID, record.VerbCancel, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(t.Context(), task.ID); err != nil {
		t.Fatal(err)
	}
	if img, in := rf.Media(); in || rf.Stats().MediaEjected != 1 {
		t.Fatalf("after the cancel the BMC holds %q (inserted %v), %d ejects", img, in, rf.Stats().MediaEjected)
	}
}

// crashAfterInsert is the lab's Redfish driver whose first InsertMedia
// reaches the BMC and then "kills" the engine (its context cancelled)
// before the engine records anything.
type crashAfterInsert struct {
	drivers.OOB
	once  sync.Once
	crash func()
}

func (c *crashAfterInsert) InsertMedia(ctx context.Context, b drivers.BMC, url string) (drivers.Result, error) {
	res, err := c.OOB.(drivers.OOBVirtualMedia).InsertMedia(ctx, b, url)
	crashed := false
	c.once.Do(func() { c.crash(); crashed = true })
	if crashed {
		return drivers.Result{}, context.Canceled
	}
	return res, err
}

func (c *crashAfterInsert) EjectMedia(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	return c.OOB.(drivers.OOBVirtualMedia).EjectMedia(ctx, b)
}

// TestVirtualMediaResumesAfterCrash: the engine dies right after the BMC
// inserted the ISO, before it recorded the step; the next engine resumes
// the node, finds the ISO in (one insert in all, counted at the lab's
// BMC), boots it, deploys and ejects it once.
func TestVirtualMediaResumesAfterCrash(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	node := redfishNode(t, d)
	withProfile(d, node, func(hw *design.HardwareProfileSpec) { hw.VirtualMedia = &design.VirtualMediaBoot{ISO: labISO} })
	env := startEnv(t, d, nil, nil, nil)
	m := env.Lab.Machine(node)
	m.SetPXE(false)
	rf := m.Redfish()
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	e.Close()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg := env.Config()
	cfg.Drivers.OOBByType = maps.Clone(cfg.Drivers.OOBByType)
	cfg.Drivers.OOBByType["redfish"] = &crashAfterInsert{OOB: cfg.Drivers.OOBByType["redfish"], crash: cancel}
	e1, task := runToCrash(ctx, t, cfg, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: onlyNodes(node)})
	e1.Close()
	if _, in := rf.Media(); !in || m.IsPoweredOn() {
		t.Fatalf("at the crash: ISO inserted %v, machine on %v; want in and off", in, m.IsPoweredOn())
	}

	e2 := engine(t, env)
	wctx, wcancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer wcancel()
	if _, err := e2.Wait(wctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if got, _, err := e2.Task(t.Context(), task.ID); err != nil || got.Status != record.TaskSucceeded {
		t.Fatalf("task %+v %v", got, err)
	}
	st := rf.Stats()
	if _, in := rf.Media(); in || st.MediaInserted != 1 || st.MediaEjected != 1 {
		t.Fatalf("the BMC saw %d inserts and %d ejects, inserted at the end %v; want one each, nothing in", st.MediaInserted, st.MediaEjected, in)
	}
	if boots := m.BootLog(); len(boots) == 0 || boots[0] != lab.BootFromProvisioner || slices.Contains(boots, lab.BootFromPXE) {
		t.Fatalf("boots %v", boots)
	}
}

// TestVirtualMediaRescueAndTests: the provisioner's own boots of a
// deployed machine without PXE (rescue mode, hardware tests) find the
// ISO in: rescue_enter inserts it and leaves it in for the rescue
// environment, rescue_exit ejects it once the machine is back in its
// OS, test_nodes inserts it and ejects it as the tests end. Counted at
// the lab's BMC; the machine boots the ISO for each and never PXE.
func TestVirtualMediaRescueAndTests(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	node := redfishNode(t, d)
	withProfile(d, node, func(hw *design.HardwareProfileSpec) { hw.VirtualMedia = &design.VirtualMediaBoot{ISO: labISO} })
	env := startEnv(t, d, nil, nil, nil)
	m := env.Lab.Machine(node)
	m.SetPXE(false)
	rf := m.Redfish()
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: onlyNodes(node)}, record.TaskSucceeded)
	media := func(what string, inserts, ejects uint64, in bool) {
		t.Helper()
		st := rf.Stats()
		if _, got := rf.Media(); got != in || st.MediaInserted != inserts || st.MediaEjected != ejects {
			t.Fatalf("%s: ISO in %v, %d inserts, %d ejects; want %v, %d, %d", what, got, st.MediaInserted, st.MediaEjected, in, inserts, ejects)
		}
	}
	media("deployed", 1, 1, false)
	boots := len(m.BootLog())

	run(t, e, record.Request{Action: record.ActionRescueEnter, Requester: "test", Filter: onlyNodes(node)}, record.TaskSucceeded)
	media("in rescue mode", 2, 1, true)
	run(t, e, record.Request{Action: record.ActionRescueExit, Requester: "test", Filter: onlyNodes(node)}, record.TaskSucceeded)
	media("rescue exited", 2, 2, false)
	run(t, e, record.Request{Action: record.ActionTestNodes, Requester: "test", Filter: onlyNodes(node)}, record.TaskSucceeded)
	media("tested", 3, 3, false)
	later := m.BootLog()[boots:]
	if !slices.Contains(later, lab.BootFromProvisioner) || slices.Contains(later, lab.BootFromPXE) {
		t.Fatalf("boots after the deploy %v: want the ISO into the provisioner, never PXE", later)
	}
}
