package orchestrator_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// labGPU is the example's GPU node whose Redfish BMC the lab runs, with
// the example's baseline (a BIOS update, two BIOS settings, a RAID-1
// boot volume of bays 0 and 1).
const labGPU = "r01-gpu01"

// labBMC is the node's BMC in the lab: its Redfish service.
func labBMC(t *testing.T, env *labrun.Env, node string) *simrf.Service {
	t.Helper()
	rf := env.Lab.Machine(node).Redfish()
	if rf == nil {
		t.Fatalf("%s has no Redfish BMC in the lab", node)
	}
	return rf
}

func labVersion(rf *simrf.Service, kind string) string {
	for _, f := range rf.Firmware() {
		if f.Kind == kind {
			return f.Version
		}
	}
	return ""
}

// checkBootable checks, from the BMC, that a failed baseline left the
// machine as it boots: no update running, no BIOS setting staged, the
// BIOS firmware still at its old version in effect; pending firmware only
// when its update was installed whole (installed: it takes effect at the
// next boot, a good image).
func checkBootable(t *testing.T, rf *simrf.Service, biosVersion string, installed bool) {
	t.Helper()
	if _, pending := rf.BIOS(); len(pending) != 0 {
		t.Errorf("BIOS settings left staged: %v", pending)
	}
	u := rf.Updates()
	if u.ResetsDuringUpdate != 0 {
		t.Errorf("the machine was reset %d time(s) while a firmware update ran", u.ResetsDuringUpdate)
	}
	if p := rf.PendingFirmware(); len(p) != 0 && (!installed || u.Completed != 1) {
		t.Errorf("firmware left pending: %v (updates %+v)", p, u)
	}
	if v := labVersion(rf, "bios"); v != biosVersion {
		t.Errorf("BIOS firmware %s, want %s as before", v, biosVersion)
	}
	for _, v := range rf.Volumes() {
		if v.Building {
			t.Errorf("volume %s left building", v.ID)
		}
	}
}

// TestBaselineOnTheLab: the example's GPU node is brought to its
// baseline on the lab's Redfish BMC while it is prepared: one firmware
// update (the BMC counts one SimpleUpdate, never two at once), the BIOS
// settings in effect and nothing pending, the RAID-1 volume built, all
// after one reset.
func TestBaselineOnTheLab(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	rf := labBMC(t, env, labGPU)
	before := labVersion(rf, "bios")
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(labGPU), Requester: "test"}, record.TaskSucceeded)
	u := rf.Updates()
	if u.SimpleUpdates != 1 || u.MaxRunning > 1 || u.Lost != 0 || u.Failed != 0 || u.ResetsDuringUpdate != 0 {
		t.Errorf("the BMC's updates: %+v, want one SimpleUpdate, never two at once", u)
	}
	if v := labVersion(rf, "bios"); v != "2.19.1" || before == "2.19.1" {
		t.Errorf("BIOS firmware %s → %s, want → 2.19.1", before, v)
	}
	cur, pending := rf.BIOS()
	for k, want := range d.Nodes[labGPU].Spec.Hardware.BIOS.Attributes {
		if got, _ := cur[k].(string); got != want {
			t.Errorf("BIOS %s = %v, want %s", k, cur[k], want)
		}
	}
	if len(pending) != 0 || len(rf.PendingFirmware()) != 0 {
		t.Errorf("pending after the baseline: BIOS %v, firmware %v", pending, rf.PendingFirmware())
	}
	if vols := rf.Volumes(); len(vols) != 1 || vols[0].RAIDType != "RAID1" || len(vols[0].Drives) != 2 || vols[0].Building {
		t.Errorf("volumes %+v, want one RAID1 of two bays, built", vols)
	}
	rec := nodeRecord(t, e, labGPU)
	if rec.Baseline == nil || rec.Baseline.Verified.IsZero() {
		t.Errorf("the node's baseline record: %+v", rec.Baseline)
	}
}

// TestBaselineBadInputOnTheLab: each bad input of the issue fails the
// example's GPU node at the baseline stage with the reason, and its
// machine stays bootable as its BMC reports it.
func TestBaselineBadInputOnTheLab(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		design func(*design.Design)
		// late changes the engine's design after the lab was built from
		// it (the lab's machines match the design they were built from).
		late func(*design.Design)
		bmc  func(*simrf.Service)
		want []string
		// installed: the firmware update ended before the failure
		// (pending until the next boot).
		installed bool
	}{
		{"wrong checksum", func(d *design.Design) {
			hw := *d.Nodes[labGPU].Spec.Hardware
			hw.Firmware = append([]design.FirmwareBaseline(nil), hw.Firmware...)
			hw.Firmware[0].Image.SHA256 = strings.Repeat("0", 64)
			d.Nodes[labGPU].Spec.Hardware = &hw
		}, nil, nil, []string{"checksum mismatch", strings.Repeat("0", 64), "refused before any BMC"}, false},
		// Checks that can be made before anything changes are: a BIOS
		// attribute the BMC does not have, a RAID member bay it has no
		// drive in, a volume larger than its drives hold: the node fails
		// at the plan, before the firmware update (the BMC counts none).
		{"BIOS attribute the BMC lacks", func(d *design.Design) {
			hw := *d.Nodes[labGPU].Spec.Hardware
			bios := *hw.BIOS
			bios.Attributes = maps.Clone(bios.Attributes)
			bios.Attributes["NoSuchSetting"] = "Enabled"
			hw.BIOS = &bios
			d.Nodes[labGPU].Spec.Hardware = &hw
		}, nil, nil, []string{"NoSuchSetting", "does not have", "nothing was changed"}, false},
		{"RAID bay without a drive", nil, func(d *design.Design) {
			hw := *d.Nodes[labGPU].Spec.Hardware
			hw.DeviceAliases = maps.Clone(hw.DeviceAliases)
			a := hw.DeviceAliases["os1"]
			a.Address = "37"
			hw.DeviceAliases["os1"] = a
			d.Nodes[labGPU].Spec.Hardware = &hw
		}, nil, []string{"RAID volume os", "bay 37", "nothing was changed"}, false},
		{"RAID volume larger than its drives", func(d *design.Design) {
			hw := *d.Nodes[labGPU].Spec.Hardware
			raid := *hw.RAID
			raid.Volumes = slices.Clone(raid.Volumes)
			raid.Volumes[0].Size = "100ti"
			hw.RAID = &raid
			d.Nodes[labGPU].Spec.Hardware = &hw
		}, nil, nil, []string{"RAID volume os", "larger than", "nothing was changed"}, false},
		{"BMC reboots mid-update", nil, nil, func(rf *simrf.Service) { rf.RebootMidUpdate() }, []string{"firmware update of bios", "2.19.1"}, false},
		{"BIOS attribute rejected", nil, nil, func(rf *simrf.Service) { rf.RefuseBIOS("UsbControl") }, []string{"BIOS settings of hardware profile", "UsbControl", "none was staged"}, true},
		{"RAID layout refused", nil, nil, func(rf *simrf.Service) { rf.RefuseVolumes("the controller has no free bays") }, []string{"RAID volume os", "no free bays"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := designtest.Example(t)
			if tc.design != nil {
				tc.design(d)
			}
			env, e := prepared(t, d, nil)
			if tc.late != nil {
				tc.late(d)
				putDesign(t, env, d)
			}
			rf := labBMC(t, env, labGPU)
			before := labVersion(rf, "bios")
			if tc.bmc != nil {
				tc.bmc(rf)
			}
			_, res := run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(labGPU), Requester: "test"}, record.TaskFailed)
			r := res[0]
			if r.Stage != record.StageBaseline {
				t.Errorf("failed at %s, want baseline", r.Stage)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Reason, w) {
					t.Errorf("reason %q does not say %q", r.Reason, w)
				}
			}
			if (tc.design != nil || tc.late != nil) && rf.Updates().SimpleUpdates != 0 {
				t.Errorf("the BMC got %d updates after a refusal at the plan", rf.Updates().SimpleUpdates)
			}
			if u := rf.Updates(); (tc.design != nil || tc.late != nil) && u.VolumesCreated != 0 {
				t.Errorf("the controller built %d volume(s) after a refusal at the plan", u.VolumesCreated)
			}
			checkBootable(t, rf, before, tc.installed)
		})
	}
}

// TestBaselineCrashOnTheLab: the engine stops right after it saved the
// handle of the lab BMC's running update; the next engine on the same
// state follows that update to its end: the BMC counts one SimpleUpdate.
func TestBaselineCrashOnTheLab(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	base := memory.New()
	env := startEnv(t, d, base, nil, nil)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	e.Close()
	rf := labBMC(t, env, labGPU)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs := &handleCrashStore{Store: base, onTrip: cancel}
	cfg := env.Config()
	cfg.Store = cs
	e1, task := runToCrash(ctx, t, cfg, record.Request{Action: record.ActionPrepareNodes, Requester: "test", Filter: only(labGPU)})
	e1.Close()
	if u := rf.Updates(); !cs.tripped.Load() || u.SimpleUpdates != 1 || u.Completed != 0 {
		t.Fatalf("crash %v, BMC %+v: want a crash while the one update runs", cs.tripped.Load(), u)
	}
	e2 := engine(t, env)
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	if _, err := e2.Wait(wctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if r := results(t, e2, task.ID)[labGPU]; r.Outcome != record.OutcomeSucceeded {
		t.Fatalf("%s: %s at %s: %s", labGPU, r.Outcome, r.Stage, r.Reason)
	}
	if u := rf.Updates(); u.SimpleUpdates != 1 || u.RefusedBusy != 0 || u.Completed != 1 || u.ResetsDuringUpdate != 0 {
		t.Errorf("the BMC's updates after the restart: %+v, want the one update followed to its end", u)
	}
	if v := labVersion(rf, "bios"); v != "2.19.1" {
		t.Errorf("BIOS firmware %s, want 2.19.1", v)
	}
}

// maxOverlap is the most spans running at one time.
func maxOverlap(spans []simrf.UpdateSpan) int {
	most := 0
	for _, s := range spans {
		n := 0
		for _, o := range spans {
			if !o.Start.After(s.Start) && (o.End.IsZero() || o.End.After(s.Start)) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// TestBaselineSiteLimitOnTheLab: the Site's lifecycle.baseline.maxParallel
// bounds the firmware updates running at once, as the lab's BMCs timed
// them: 1 keeps the example's two GPU nodes' updates apart, the default
// lets them run together.
func TestBaselineSiteLimitOnTheLab(t *testing.T) {
	t.Parallel()
	gpus := []string{"r01-gpu01", "r02-gpu01"}
	for _, tc := range []struct {
		limit, want int
	}{{1, 1}, {0, 2}} {
		d := designtest.Example(t)
		if tc.limit > 0 {
			d.Site.Spec.Lifecycle.Baseline.MaxParallel = &tc.limit
		}
		// Updates that must overlap last 2.4 s (time scale 0.01, not
		// 0.001's 240 ms): the two nodes reach their updates a moment
		// apart, which a loaded machine stretched past 240 ms.
		scale := 0.001
		if tc.want > 1 {
			scale = 0.01
		}
		env, e := preparedAt(t, d, scale)
		run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(gpus...), Requester: "test"}, record.TaskSucceeded)
		var spans []simrf.UpdateSpan
		for _, n := range gpus {
			rf := labBMC(t, env, n)
			if u := rf.Updates(); u.SimpleUpdates != 1 || u.MaxRunning != 1 || u.ResetsDuringUpdate != 0 {
				t.Errorf("maxParallel %d: %s's BMC: %+v, want one update", tc.limit, n, u)
			}
			spans = append(spans, rf.UpdateSpans()...)
		}
		if got := maxOverlap(spans); got != tc.want {
			t.Errorf("maxParallel %d: %d updates ran at once in the lab (%+v), want %d", tc.limit, got, spans, tc.want)
		}
	}
}

// preparedAt is prepared with the lab at time scale scale.
func preparedAt(t *testing.T, d *design.Design, scale float64) (*labrun.Env, *orchestrator.Engine) {
	t.Helper()
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: scale, Seed: 7,
		Tune: func(c *orchestrator.Config) { c.BootstrapDeadline = 30 * time.Second }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	return env, e
}

// TestBaselineCancelMidUpdateOnTheLab: a node cancelled while its BMC
// runs its firmware update (which cannot be stopped) does not hold the
// Site's update slot after that update ended: with maxParallel 1 the next
// node's update starts once the first ended, not minutes later; the
// machine is never reset while its update runs, and the two updates never
// overlap, as the lab's BMCs timed them.
func TestBaselineCancelMidUpdateOnTheLab(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	one := 1
	d.Site.Spec.Lifecycle.Baseline.MaxParallel = &one
	env, e := prepared(t, d, nil)
	first, second := labBMC(t, env, "r01-gpu01"), labBMC(t, env, "r02-gpu01")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	task, err := e.Submit(ctx, record.Request{Action: record.ActionPrepareNodes, Filter: only("r01-gpu01"), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for first.Updates().SimpleUpdates == 0 {
		if ctx.Err() != nil {
			t.Fatal("no update started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := e.TaskVerb(ctx, task.ID, record.VerbCancel, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only("r02-gpu01"), Requester: "test"}, record.TaskSucceeded)
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the next node's prepare took %s: the cancelled node's slot outlived its update", took)
	}
	spans := append(first.UpdateSpans(), second.UpdateSpans()...)
	if got := maxOverlap(spans); got != 1 {
		t.Errorf("%d updates ran at once in the lab (%+v), want 1 (maxParallel)", got, spans)
	}
	for _, rf := range []*simrf.Service{first, second} {
		if u := rf.Updates(); u.ResetsDuringUpdate != 0 || u.SimpleUpdates != 1 {
			t.Errorf("BMC updates %+v: want one update, no reset during it", u)
		}
	}
}

// TestBaselineDryRunKeepsInstalledOnTheLab: a prepare installs the BIOS
// image (pending until the reset) and fails at the BIOS settings the BMC
// refuses; a dry run of apply_baseline then plans, and the real apply
// that follows does not install the image again: the dry run did not
// make the node forget that it is installed. The lab's BMC counts one
// SimpleUpdate in all, and the reset applies the image.
func TestBaselineDryRunKeepsInstalledOnTheLab(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	rf := labBMC(t, env, labGPU)
	rf.RefuseBIOS("UsbControl")
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(labGPU), Requester: "test"}, record.TaskFailed)
	if n := rf.Updates().SimpleUpdates; n != 1 || len(rf.PendingFirmware()) == 0 {
		t.Fatalf("after the failed prepare: %d SimpleUpdates, pending firmware %v; want 1 installed, pending", n, rf.PendingFirmware())
	}
	rf.AllowBIOS("UsbControl")
	apply := func(o *record.TaskOptions) record.Request {
		return record.Request{Action: record.ActionApplyBaseline, Filter: only(labGPU), Requester: "test", Options: o}
	}
	run(t, e, apply(&record.TaskOptions{DryRun: true}), record.TaskSucceeded)
	if n := rf.Updates().SimpleUpdates; n != 1 {
		t.Fatalf("the dry run: %d SimpleUpdates, want 1", n)
	}
	_, res := run(t, e, apply(&record.TaskOptions{Reboot: true}), record.TaskSucceeded)
	if n := rf.Updates().SimpleUpdates; n != 1 {
		t.Errorf("after the dry run the apply installed the image again: the BMC counts %d SimpleUpdates, want 1", n)
	}
	if v := labVersion(rf, "bios"); v != "2.19.1" || len(rf.PendingFirmware()) != 0 || res[0].Stage != record.StageBaselined {
		t.Errorf("BIOS firmware %s, pending %v, stage %s: want 2.19.1 applied by the reset, baselined", v, rf.PendingFirmware(), res[0].Stage)
	}
}
