package orchestrator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/firmwarestore"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// labImage is a lab firmware image: its header line, then padding.
func labImage(kind, version string) []byte {
	return append([]byte("SLIPWAY-LAB-FIRMWARE component="+kind+" version="+version+"\n"), bytes.Repeat([]byte{0x5a}, 4096)...)
}

func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// baselineSite is the example with nodes' hardware given a baseline: BIOS
// 2.19.1 and GPU 96.00 from files of a firmware directory, a BIOS
// setting, a RAID-1 boot volume of bays 0 and 1. It returns the firmware
// store, served on loopback as the BMCs reach it.
func baselineSite(t *testing.T, nodes ...string) (*design.Design, *firmwarestore.Store, design.FirmwareImage) {
	t.Helper()
	d := designtest.Example(t)
	dir := t.TempDir()
	bios, gpu := labImage("bios", "2.19.1"), labImage("gpu", "96.00")
	for name, b := range map[string][]byte{"bios.bin": bios, "gpu.bin": gpu, "bmc.bin": labImage("bmc", "7.10")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range nodes {
		hw := *d.Nodes[node].Spec.Hardware
		hw.DeviceAliases = maps.Clone(hw.DeviceAliases)
		if hw.DeviceAliases == nil {
			hw.DeviceAliases = map[string]design.DeviceAlias{}
		}
		hw.DeviceAliases["gpu0"] = design.DeviceAlias{Bus: "pci", Address: "0000:18:00.0"}
		hw.DeviceAliases["os0"] = design.DeviceAlias{Bus: "bay", Address: "0"}
		hw.DeviceAliases["os1"] = design.DeviceAlias{Bus: "bay", Address: "1"}
		hw.BIOS = &design.BIOSSettings{Attributes: map[string]string{"ProcVirtualization": "Enabled", "SriovGlobalEnable": "Enabled"}}
		hw.Firmware = []design.FirmwareBaseline{
			{Component: "bios", Version: "2.19.1", Image: design.FirmwareImage{File: "bios.bin", SHA256: hexSum(bios)}},
			{Component: "gpu", Devices: []string{"gpu0"}, Version: "96.00", Image: design.FirmwareImage{File: "gpu.bin", SHA256: hexSum(gpu)}},
		}
		hw.RAID = &design.RAIDBaseline{Volumes: []design.RAIDVolume{{Name: "os", Level: "raid1", Drives: []string{"os0", "os1"}, Boot: true}}}
		d.Nodes[node].Spec.Hardware = &hw
	}
	var h atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.Load().(http.Handler).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	st, err := firmwarestore.New(firmwarestore.Config{Dir: dir, CacheDir: t.TempDir(), BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	h.Store(st.Handler())
	return d, st, design.FirmwareImage{File: "bios.bin", SHA256: hexSum(bios)}
}

// baselineEnv starts the lab with fw as the Site's OOB driver (the
// IPMI nodes' driver: the tests use those nodes) and st as the
// firmware store, on store (nil: a new one).
func baselineEnv(t *testing.T, d *design.Design, st *firmwarestore.Store, fw **fwBMC, store statestore.Store) (*labrun.Env, *orchestrator.Engine) {
	t.Helper()
	env := startEnv(t, d, store, nil, func(c *orchestrator.Config) {
		if *fw == nil {
			*fw = newFWBMC(c.Drivers.OOB, 150*time.Millisecond)
		} else {
			(*fw).OOB = c.Drivers.OOB
		}
		c.Drivers.OOB = *fw
		c.Firmware = st
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	return env, e
}

func baselineEvent(t *testing.T, e *orchestrator.Engine, task, node, kind, text string) bool {
	t.Helper()
	evs, err := e.Events(t.Context(), 0, 0, task, node)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(evs, func(ev record.Event) bool {
		return (kind == "" || ev.Kind == kind) && strings.Contains(ev.Message, text)
	})
}

// TestBaselineAppliedAndVerified: a node whose machine differs from its
// profile's baseline is brought to it while it is prepared: the plan is
// recorded before anything changes, one update per component, the BIOS
// staged, the volume built, one reset, and the BMC reports it all after
// it; a second prepare finds nothing to change and starts no update.
func TestBaselineAppliedAndVerified(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	d, st, _ := baselineSite(t, node)
	var fw *fwBMC
	_, e := baselineEnv(t, d, st, &fw, nil)
	task, _ := run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(node), Requester: "test"}, record.TaskSucceeded)
	s, starts := fw.state(node)
	if starts != 2 || fw.version(node, "BIOS") != "2.19.1" || fw.version(node, "GPU.1") != "96.00" || fw.version(node, "GPU.2") != "95.00" {
		t.Errorf("BMC after prepare: %d updates, inventory %+v; want 2 updates, BIOS 2.19.1, GPU.1 96.00, GPU.2 (not in the baseline's devices) 95.00", starts, s.inv)
	}
	if s.bios["ProcVirtualization"] != "Enabled" || len(s.biosPending) != 0 {
		t.Errorf("BIOS %v pending %v, want ProcVirtualization Enabled and nothing pending", s.bios, s.biosPending)
	}
	if len(s.volumes) != 1 || s.volumes[0].Level != "raid1" || !slices.Equal(s.volumes[0].Drives, []string{"0", "1"}) || !s.volumes[0].Boot {
		t.Errorf("volumes %+v, want one raid1 boot volume of bays 0 and 1", s.volumes)
	}
	if fw.resetsInUpd != 0 || fw.busyStarts != 0 {
		t.Errorf("%d resets during an update, %d starts while one ran: want none", fw.resetsInUpd, fw.busyStarts)
	}
	if st.Fetches() != 2 || fw.downloads != 2 {
		t.Errorf("store read %d images, the BMC downloaded %d: want 2 and 2", st.Fetches(), fw.downloads)
	}
	for _, want := range []string{"firmware bios (BIOS): 2.18.0 → 2.19.1", "firmware gpu (GPU.1): 95.00 → 96.00", "bios ProcVirtualization: Disabled → Enabled", "raid os (bays 0,1): absent → raid1"} {
		if !baselineEvent(t, e, task.ID, node, "baseline-plan", want) {
			t.Errorf("no baseline-plan event says %q", want)
		}
	}
	if !baselineEvent(t, e, task.ID, node, "progress", "% complete") {
		t.Errorf("no progress event of an update")
	}
	if rec := nodeRecord(t, e, node); rec.Baseline == nil || rec.Baseline.Verified.IsZero() || len(rec.Baseline.Plan) != 4 {
		t.Errorf("the node's record's baseline: %+v", rec.Baseline)
	}
	// Again: the machine is at its baseline, nothing changes.
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(node), Requester: "test"}, record.TaskSucceeded)
	if _, n := fw.state(node); n != 2 {
		t.Errorf("%d updates after a second prepare, want still 2", n)
	}
}

// TestBaselineWrongChecksum: an image whose SHA-256 differs from the
// profile's is refused before the BMC sees it: the node fails naming the
// profile, component and both hashes; the BMC got no update and no
// download.
func TestBaselineWrongChecksum(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	d, st, _ := baselineSite(t, node)
	hw := d.Nodes[node].Spec.Hardware
	good := hw.Firmware[1].Image.SHA256
	wrong := strings.Repeat("ab", 32)
	hw.Firmware[1].Image.SHA256 = wrong
	var fw *fwBMC
	_, e := baselineEnv(t, d, st, &fw, nil)
	_, res := run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(node), Requester: "test"}, record.TaskFailed)
	r := res[0]
	for _, w := range []string{d.Nodes[node].Spec.HardwareProfile, "component gpu", "gpu.bin", wrong, good, "refused before any BMC"} {
		if !strings.Contains(r.Reason, w) {
			t.Errorf("reason %q does not name %q", r.Reason, w)
		}
	}
	if r.Stage != record.StageBaseline {
		t.Errorf("failed at %s, want baseline", r.Stage)
	}
	if s, starts := fw.state(node); starts != 0 || fw.downloads != 0 || s.resets != 0 || len(s.biosPending) != 0 {
		t.Errorf("the BMC saw %d updates, %d downloads, %d resets, pending BIOS %v: want nothing", starts, fw.downloads, s.resets, s.biosPending)
	}
}

// TestBaselineBadInput: a BMC that reboots mid-update, a BIOS attribute
// the BMC rejects, a RAID layout the controller refuses: each fails the
// node at the baseline stage naming the reason and the next step, and
// the machine stays bootable (from the BMC's side: no reset during an
// update, no BIOS left pending, no volume half-made).
func TestBaselineBadInput(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	for _, tc := range []struct {
		name    string
		fault   func(*fwBMC)
		want    []string
		volumes int // built before the failure: whole, the machine boots as before
	}{
		{"reboot mid-update", func(f *fwBMC) { f.rebootMid = true }, []string{"firmware update of bios to version 2.19.1 failed", "BMC restarted during the update", "not reset"}, 0},
		{"BIOS attribute rejected", func(f *fwBMC) { f.rejectAttr = "ProcVirtualization" }, []string{"refused by BMC", "ProcVirtualization is not in the BIOS registry", "none was staged"}, 1},
		{"RAID refused", func(f *fwBMC) { f.raidRefuse = "drive Disk.Bay.1 is a member of Volume.9" }, []string{"RAID volume os (raid1 of bays 0,1) refused", "Disk.Bay.1 is a member"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, st, _ := baselineSite(t, node)
			fw := newFWBMC(nil, 150*time.Millisecond)
			tc.fault(fw)
			_, e := baselineEnv(t, d, st, &fw, nil)
			task, res := run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(node), Requester: "test"}, record.TaskFailed)
			r := res[0]
			if r.Stage != record.StageBaseline {
				t.Errorf("failed at %s, want baseline", r.Stage)
			}
			for _, w := range append(tc.want, "orchestrator retry "+task.ID) {
				if !strings.Contains(r.Reason, w) {
					t.Errorf("reason %q does not say %q", r.Reason, w)
				}
			}
			s, _ := fw.state(node)
			if fw.resetsInUpd != 0 || s.resets != 0 || len(s.biosPending) != 0 || len(s.volumes) != tc.volumes {
				t.Errorf("BMC: %d resets during an update, %d resets, BIOS pending %v, volumes %+v: want none, none, none and %d volume(s)", fw.resetsInUpd, s.resets, s.biosPending, s.volumes, tc.volumes)
			}
			if fw.version(node, "BIOS") != "2.18.0" {
				t.Errorf("BIOS version %s, want 2.18.0 as before", fw.version(node, "BIOS"))
			}
		})
	}
}

// TestBaselineSiteParallel: the Site's maxParallel bounds the updates
// running at once, as the BMCs count them, and each BMC runs one at a
// time.
func TestBaselineSiteParallel(t *testing.T) {
	t.Parallel()
	nodes := []string{"r01-cmp01", "r01-cmp02", "r01-cmp03", "r02-cmp01", "r02-cmp02"}
	d, st, _ := baselineSite(t, nodes...)
	two := 2
	d.Site.Spec.Lifecycle.Baseline.MaxParallel = &two
	var fw *fwBMC
	_, e := baselineEnv(t, d, st, &fw, nil)
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(nodes...), Requester: "test"}, record.TaskSucceeded)
	if fw.maxRunning != 2 || fw.busyStarts != 0 {
		t.Errorf("at most %d updates ran at once (want 2, the Site's maxParallel), %d starts on a busy BMC (want 0)", fw.maxRunning, fw.busyStarts)
	}
	for _, n := range nodes {
		if _, starts := fw.state(n); starts != 2 {
			t.Errorf("%s: %d updates, want 2", n, starts)
		}
	}
}

// TestBaselineForeignUpdateFollowed: a BMC running an update someone
// else started answers ErrUpdateRunning: the engine starts no second
// update, waits for it to end, then runs its own.
func TestBaselineForeignUpdateFollowed(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	d, st, img := baselineSite(t, node)
	var fw *fwBMC
	_, e := baselineEnv(t, d, st, &fw, nil)
	url, err := st.ImageURL(t.Context(), img, "x", "bios")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.StartFirmwareUpdate(t.Context(), drivers.BMC{Node: node}, drivers.FirmwareUpdate{Targets: []string{"BIOS"}, ImageURL: url, SHA256: img.SHA256, Version: "2.19.1"}); err != nil {
		t.Fatal(err)
	}
	task, _ := run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(node), Requester: "test"}, record.TaskSucceeded)
	if !baselineEvent(t, e, task.ID, node, "firmware", "runs a firmware update already") {
		t.Errorf("no event says the BMC ran an update already")
	}
	if fw.resetsInUpd != 0 {
		t.Errorf("%d resets during an update", fw.resetsInUpd)
	}
}

// handleCrashStore "kills the engine" right after the write that saved a
// firmware update's handle: the write lands, the engine stops.
type handleCrashStore struct {
	statestore.Store
	tripped atomic.Bool
	onTrip  func()
}

func (c *handleCrashStore) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	if c.tripped.Load() {
		return nil, errCrashed
	}
	revs, err := c.Store.Write(ctx, ops...)
	for _, op := range ops {
		if err == nil && op.Kind == statestore.OpPut && bytes.Contains(op.Value, []byte(`"handle":"/redfish`)) {
			c.tripped.Store(true)
			c.onTrip()
		}
	}
	return revs, err
}

// TestBaselineCrashFollowsUpdate: the engine stops right after it saved a
// running update's handle; the next engine, on the same state, follows
// that update to its end and starts no second one (the BMC counts one
// update per component).
func TestBaselineCrashFollowsUpdate(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	d, st, _ := baselineSite(t, node)
	base := memory.New()
	fw := newFWBMC(nil, 400*time.Millisecond)
	env, e := baselineEnv(t, d, st, &fw, base)
	e.Close()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs := &handleCrashStore{Store: base, onTrip: cancel}
	cfg := env.Config()
	cfg.Store = cs
	e1, task := runToCrash(ctx, t, cfg, record.Request{Action: record.ActionPrepareNodes, Requester: "test", Filter: only(node)})
	e1.Close()
	if _, starts := fw.state(node); !cs.tripped.Load() || starts != 1 {
		t.Fatalf("crash %v with %d updates started, want a crash after the first", cs.tripped.Load(), starts)
	}
	e2 := engine(t, env)
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	if _, err := e2.Wait(wctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if r := results(t, e2, task.ID)[node]; r.Outcome != record.OutcomeSucceeded {
		t.Fatalf("%s: %s at %s: %s", node, r.Outcome, r.Stage, r.Reason)
	}
	if _, starts := fw.state(node); starts != 2 || fw.busyStarts != 0 || fw.resetsInUpd != 0 {
		t.Errorf("%d updates started (want 2: one per component, the first followed after the restart), %d on a busy BMC, %d resets during one", starts, fw.busyStarts, fw.resetsInUpd)
	}
	if fw.version(node, "BIOS") != "2.19.1" {
		t.Errorf("BIOS version %s after the restart", fw.version(node, "BIOS"))
	}
}

// TestApplyBaselinePolicy: apply_baseline under the Site's reboots deny
// refuses a plan that needs a reset unless asked with reboot, naming the
// way; a dry run records the plan and changes nothing; with reboot the
// baseline is applied and verified.
func TestApplyBaselinePolicy(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	d, st, _ := baselineSite(t, node)
	var fw *fwBMC
	_, e := baselineEnv(t, d, st, &fw, nil)
	req := func(o *record.TaskOptions) record.Request {
		return record.Request{Action: record.ActionApplyBaseline, Filter: only(node), Requester: "test", Options: o}
	}
	dry, _ := run(t, e, req(&record.TaskOptions{DryRun: true}), record.TaskSucceeded)
	if rec := nodeRecord(t, e, node); rec.Baseline == nil || len(rec.Baseline.Plan) != 4 || !rec.Baseline.DryRun || !baselineEvent(t, e, dry.ID, node, "baseline-plan", "gpu") {
		t.Errorf("dry run: the record's plan %+v", rec.Baseline)
	}
	_, res := run(t, e, req(nil), record.TaskFailed)
	if !strings.Contains(res[0].Reason, "reboots is deny") || !strings.Contains(res[0].Reason, "--reboot") {
		t.Errorf("reason %q: want the policy and the --reboot way", res[0].Reason)
	}
	if s, starts := fw.state(node); starts != 0 || s.resets != 0 {
		t.Fatalf("%d updates, %d resets before a reboot was allowed", starts, s.resets)
	}
	_, res = run(t, e, req(&record.TaskOptions{Reboot: true}), record.TaskSucceeded)
	if res[0].Stage != record.StageBaselined {
		t.Errorf("stage %s, want baselined", res[0].Stage)
	}
	if s, starts := fw.state(node); starts != 2 || s.resets != 1 || fw.version(node, "GPU.1") != "96.00" {
		t.Errorf("%d updates, %d resets, GPU.1 %s: want 2, 1 and 96.00", starts, s.resets, fw.version(node, "GPU.1"))
	}
}

// TestBaselineWaitsForTheBMCReset: a BMC firmware update ends with the
// BMC resetting itself, answering nothing for a while; the stage waits
// for it (up to drivers.ResetWait) instead of spending its retries, then
// builds the volume, stages the BIOS and verifies, the BMC at 7.10.
func TestBaselineWaitsForTheBMCReset(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	d, st, _ := baselineSite(t, node)
	hw := d.Nodes[node].Spec.Hardware
	hw.Firmware = []design.FirmwareBaseline{{Component: "bmc", Version: "7.10", Image: design.FirmwareImage{File: "bmc.bin", SHA256: hexSum(labImage("bmc", "7.10"))}}}
	fw := newFWBMC(nil, 100*time.Millisecond)
	fw.bmcResetFor = 450 * time.Millisecond // within drivers.ResetWait at the test's time scale (600 ms)
	_, e := baselineEnv(t, d, st, &fw, nil)
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(node), Requester: "test"}, record.TaskSucceeded)
	s, starts := fw.state(node)
	if starts != 1 || fw.version(node, "BMC") != "7.10" || len(s.volumes) != 1 || s.bios["ProcVirtualization"] != "Enabled" || fw.downAnswers == 0 {
		t.Errorf("BMC: %d updates, version %s, volumes %+v, BIOS %v, %d calls refused while it reset: want 1, 7.10, one volume, the setting, some refused",
			starts, fw.version(node, "BMC"), s.volumes, s.bios, fw.downAnswers)
	}
}

// TestBaselineRetryPlansAgain: a node whose firmware update the BMC
// abandoned (it rebooted mid-update) is retried once the BMC behaves: the
// retry reads the machine and plans again, starting a new update, instead
// of following the lost one (which failed the node again).
func TestBaselineRetryPlansAgain(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	d, st, _ := baselineSite(t, node)
	fw := newFWBMC(nil, 100*time.Millisecond)
	fw.rebootMid = true
	_, e := baselineEnv(t, d, st, &fw, nil)
	task, _ := run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(node), Requester: "test"}, record.TaskFailed)
	fw.mu.Lock()
	fw.rebootMid = false
	fw.mu.Unlock()
	if r := applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)[node]; r.Outcome != record.OutcomeSucceeded {
		t.Fatalf("%s after retry: %s at %s: %s", node, r.Outcome, r.Stage, r.Reason)
	}
	if _, starts := fw.state(node); starts != 3 || fw.version(node, "BIOS") != "2.19.1" || fw.version(node, "GPU.1") != "96.00" {
		t.Errorf("%d updates (want 3: the lost one, then bios and gpu), BIOS %s, GPU.1 %s", starts, fw.version(node, "BIOS"), fw.version(node, "GPU.1"))
	}
}

// resetCrashStore refuses every write once the fake BMC saw a reset of
// node, and stops the engine: a serve killed right after it power-cycled
// the machine, before it recorded so.
type resetCrashStore struct {
	statestore.Store
	fw      *fwBMC
	node    string
	tripped atomic.Bool
	onTrip  func()
}

func (c *resetCrashStore) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	if s, _ := c.fw.state(c.node); s.resets > 0 && !c.tripped.Swap(true) {
		c.onTrip()
	}
	if c.tripped.Load() {
		return nil, errCrashed
	}
	return c.Store.Write(ctx, ops...)
}

// TestBaselineCrashAfterTheReset: the engine stops right after it
// power-cycled the machine to apply the baseline (a real BMC then
// flashes the staged BIOS firmware during that boot); the next engine on
// the same state does not cycle it again (the fake BMC counts one reset):
// the reset is recorded as asked before it is asked, and is at most once.
func TestBaselineCrashAfterTheReset(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	d, st, _ := baselineSite(t, node)
	base := memory.New()
	var fw *fwBMC
	env, e := baselineEnv(t, d, st, &fw, base)
	e.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs := &resetCrashStore{Store: base, fw: fw, node: node, onTrip: cancel}
	cfg := env.Config()
	cfg.Store = cs
	e1, task := runToCrash(ctx, t, cfg, record.Request{Action: record.ActionApplyBaseline, Requester: "test", Filter: only(node), Options: &record.TaskOptions{Reboot: true}})
	e1.Close()
	if s, _ := fw.state(node); !cs.tripped.Load() || s.resets != 1 {
		t.Fatalf("crash %v after %d resets, want a crash after the one reset", cs.tripped.Load(), s.resets)
	}
	e2 := engine(t, env)
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	if _, err := e2.Wait(wctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if r := results(t, e2, task.ID)[node]; r.Outcome != record.OutcomeSucceeded {
		t.Errorf("%s: %s at %s: %s", node, r.Outcome, r.Stage, r.Reason)
	}
	if s, starts := fw.state(node); s.resets != 1 || starts != 2 || fw.resetsInUpd != 0 {
		t.Errorf("%d resets, %d updates, %d resets during one: want the one reset, no second", s.resets, starts, fw.resetsInUpd)
	}
}

// TestBaselineRetryKeepsInstalledUpdates: the BIOS refuses a setting
// after the BIOS and GPU images were installed (they wait for the next
// reset, and the BMC's inventory still reports the old versions); the
// retry, once the BIOS takes the setting, does not install the same
// images again: the updates of the node's last plan that ended Done with
// no reset since are kept, and the one reset applies them (the fake BMC
// counts two updates in all).
func TestBaselineRetryKeepsInstalledUpdates(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	d, st, _ := baselineSite(t, node)
	fw := newFWBMC(nil, 100*time.Millisecond)
	fw.rejectAttr = "ProcVirtualization"
	_, e := baselineEnv(t, d, st, &fw, nil)
	task, res := run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(node), Requester: "test"}, record.TaskFailed)
	if _, starts := fw.state(node); starts != 2 || !strings.Contains(res[0].Reason, "ProcVirtualization") {
		t.Fatalf("%d updates before the refusal (want 2), reason %q", starts, res[0].Reason)
	}
	fw.mu.Lock()
	fw.rejectAttr = ""
	fw.mu.Unlock()
	if r := applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)[node]; r.Outcome != record.OutcomeSucceeded {
		t.Fatalf("%s after retry: %s at %s: %s", node, r.Outcome, r.Stage, r.Reason)
	}
	if s, starts := fw.state(node); starts != 2 || fw.version(node, "BIOS") != "2.19.1" || fw.version(node, "GPU.1") != "96.00" || s.bios["ProcVirtualization"] != "Enabled" {
		t.Errorf("%d updates (want 2: installed once), BIOS %s, GPU.1 %s, ProcVirtualization %s", starts, fw.version(node, "BIOS"), fw.version(node, "GPU.1"), s.bios["ProcVirtualization"])
	}
}

// TestBaselineSlotWaitNotTimed: a node waiting for the Site's update slot
// (lifecycle.baseline.maxParallel) is not timed by the baseline stage's
// timeout meanwhile: at 1,000 nodes and maxParallel 32 the last nodes
// wait hours for a slot, more than the stage's 3 h, and failed without
// their BMC doing anything. Here five nodes' updates run one at a time
// (maxParallel 1), longer in all than the stage's timeout, which each
// node's own work stays well within: every node succeeds.
func TestBaselineSlotWaitNotTimed(t *testing.T) {
	t.Parallel()
	nodes := []string{"r01-cmp01", "r01-cmp02", "r01-cmp03", "r02-cmp01", "r02-cmp02"}
	d, st, _ := baselineSite(t, nodes...)
	one := 1
	d.Site.Spec.Lifecycle.Baseline.MaxParallel = &one
	var fw *fwBMC
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) {
		fw = newFWBMC(c.Drivers.OOB, 400*time.Millisecond)
		c.Drivers.OOB = fw
		c.Firmware = st
		c.Timeouts = map[record.Stage]time.Duration{record.StageBaseline: 3 * time.Second}
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	start := time.Now()
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(nodes...), Requester: "test"}, record.TaskSucceeded)
	took := time.Since(start)
	if fw.maxRunning != 1 || took < 3*time.Second {
		t.Errorf("%d updates at once in %s: want 1, the whole longer than the stage's timeout", fw.maxRunning, took)
	}
}

// TestBaselineSlotGivenWakesWaiter: a node waiting for the Site's update
// slot starts its update when the slot is given back, not at its next
// look: with maxParallel 1 and an engine whose waiting nodes look again
// only every hour (MaxWait), three nodes' updates (two each) still run
// one after the other within the test's bound, as the BMCs count them.
func TestBaselineSlotGivenWakesWaiter(t *testing.T) {
	t.Parallel()
	nodes := []string{"r01-cmp01", "r01-cmp02", "r02-cmp01"}
	d, st, _ := baselineSite(t, nodes...)
	one := 1
	d.Site.Spec.Lifecycle.Baseline.MaxParallel = &one
	var fw *fwBMC
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) {
		fw = newFWBMC(c.Drivers.OOB, 150*time.Millisecond)
		c.Drivers.OOB = fw
		c.Firmware = st
		c.MaxWait = time.Hour
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(nodes...), Requester: "test"}, record.TaskSucceeded)
	if fw.maxRunning != 1 || fw.busyStarts != 0 {
		t.Errorf("at most %d updates ran at once (want 1), %d starts on a busy BMC (want 0)", fw.maxRunning, fw.busyStarts)
	}
	for _, n := range nodes {
		if _, starts := fw.state(n); starts != 2 {
			t.Errorf("%s: %d updates, want 2", n, starts)
		}
	}
}
