package driverstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// BaselineDriver is an OOB driver with the baseline's optional
// interfaces.
type BaselineDriver interface {
	drivers.OOB
	drivers.OOBBIOS
	drivers.OOBFirmwareUpdate
	drivers.OOBRAID
}

// BaselineLab is a simulated BMC for the baseline suite: the suite reads
// each outcome from it, never from the driver alone. Its updates should
// be short (a second or less) so the suite's polls see them end.
type BaselineLab struct {
	Driver BaselineDriver
	BMC    drivers.BMC
	// ImageURL serves a good image for the component kind and version;
	// BadImageURL one the BMC refuses (not a firmware image).
	ImageURL    func(kind, version string) string
	BadImageURL string
	// Versions are the versions in effect by inventory ID, as the BMC
	// keeps them.
	Versions func() map[string]string
	// SystemReset resets the machine (what makes BIOS settings and
	// system firmware take effect).
	SystemReset func()
	// RebootMidUpdate makes the BMC reset during its next update.
	RebootMidUpdate func()
	// UpdatesStarted counts the updates the BMC accepted.
	UpdatesStarted func() int
	// Volumes are the controller's volumes: ID -> member drive addresses.
	Volumes func() map[string][]string
	// RefuseBIOS makes the BIOS refuse changing the attribute.
	RefuseBIOS func(attr string)
	// BIOSAttribute is an attribute the BIOS has and BIOSValue a value it
	// takes that differs from its current one; RefusedAttribute another.
	BIOSAttribute, BIOSValue, RefusedAttribute string
	// Bays are three drive bays behind the RAID controller with no volume.
	Bays [3]string
}

// RunOOBBaseline runs the baseline conformance suite: firmware inventory,
// an update that takes effect at the reset, no second update while one
// runs, a refused image, a BMC that resets mid-update, BIOS staging and
// refusal, RAID volumes and refused layouts. open is called once per
// subtest with a fresh lab.
func RunOOBBaseline(t *testing.T, open func(t *testing.T) BaselineLab) {
	t.Helper()
	for name, f := range map[string]func(*testing.T, BaselineLab){
		"Inventory":          baselineInventory,
		"UpdateAtReset":      baselineUpdateAtReset,
		"NoSecondUpdate":     baselineNoSecondUpdate,
		"BadImage":           baselineBadImage,
		"RebootMidUpdate":    baselineRebootMidUpdate,
		"BIOS":               baselineBIOS,
		"RAID":               baselineRAID,
		"RAIDLayoutRefused":  baselineRAIDRefused,
		"StatusOfBadHandles": baselineBadHandle,
	} {
		t.Run(name, func(t *testing.T) { f(t, open(t)) })
	}
}

func baselineInventory(t *testing.T, l BaselineLab) {
	c := newChecker(realT{t}, l.BMC.Password.Reveal())
	ctx, cancel := ctxFor()
	defer cancel()
	inv, err := l.Driver.FirmwareInventory(ctx, l.BMC)
	if !c.checkErr("FirmwareInventory", err) || err != nil {
		t.Fatalf("FirmwareInventory: %v", err)
	}
	want := l.Versions()
	kinds := map[string]bool{}
	for _, fc := range inv {
		kinds[fc.Kind] = true
		if want[fc.ID] != fc.Version {
			t.Errorf("inventory item %s: version %q, the BMC has %q", fc.ID, fc.Version, want[fc.ID])
		}
		if (fc.Kind == drivers.ComponentNIC || fc.Kind == drivers.ComponentGPU || fc.Kind == drivers.ComponentDrive) && fc.Device == "" {
			t.Errorf("inventory item %s (%s) names no device", fc.ID, fc.Kind)
		}
	}
	if len(inv) != len(want) || !kinds[drivers.ComponentBMC] || !kinds[drivers.ComponentBIOS] {
		t.Errorf("inventory %+v, the BMC has %v", inv, want)
	}
}

// itemOf is the inventory item of that kind.
func itemOf(t *testing.T, l BaselineLab, kind string) drivers.FirmwareComponent {
	t.Helper()
	ctx, cancel := ctxFor()
	defer cancel()
	inv, err := l.Driver.FirmwareInventory(ctx, l.BMC)
	if err != nil {
		t.Fatal(err)
	}
	for _, fc := range inv {
		if fc.Kind == kind {
			return fc
		}
	}
	t.Fatalf("no %s in the inventory %+v", kind, inv)
	return drivers.FirmwareComponent{}
}

func start(t *testing.T, l BaselineLab, u drivers.FirmwareUpdate) string {
	t.Helper()
	ctx, cancel := ctxFor()
	defer cancel()
	h, err := l.Driver.StartFirmwareUpdate(ctx, l.BMC, u)
	newChecker(realT{t}, l.BMC.Password.Reveal()).checkErr("StartFirmwareUpdate", err)
	if err != nil || h == "" {
		t.Fatalf("StartFirmwareUpdate: %q %v", h, err)
	}
	return h
}

// follow polls the update until it is not InProgress (bounded): its end.
func follow(t *testing.T, l BaselineLab, h string) drivers.Result {
	t.Helper()
	c := newChecker(realT{t}, l.BMC.Password.Reveal())
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r, ok := c.once("FirmwareUpdateStatus", func(ctx context.Context) (drivers.Result, error) {
			return l.Driver.FirmwareUpdateStatus(ctx, l.BMC, h)
		})
		if !ok {
			t.FailNow()
		}
		if r.Status != drivers.StatusInProgress {
			return r
		}
		time.Sleep(min(r.RetryAfter, pollMaxWait))
	}
	t.Fatalf("update %s still in progress after 20s", h)
	return drivers.Result{}
}

// baselineUpdateAtReset: the BIOS update is Done, the BMC shows the old
// version until the system's reset and the new one after it.
func baselineUpdateAtReset(t *testing.T, l BaselineLab) {
	bios := itemOf(t, l, drivers.ComponentBIOS)
	h := start(t, l, drivers.FirmwareUpdate{Targets: []string{bios.ID}, ImageURL: l.ImageURL(drivers.ComponentBIOS, "9.9.9"), Version: "9.9.9"})
	if r := follow(t, l, h); r.Status != drivers.StatusDone {
		t.Fatalf("update: %+v", r)
	}
	if v := l.Versions()[bios.ID]; v != bios.Version {
		t.Fatalf("BIOS %s before the reset, want still %s", v, bios.Version)
	}
	l.SystemReset()
	if v := l.Versions()[bios.ID]; v != "9.9.9" {
		t.Fatalf("BIOS %s after the reset, want 9.9.9", v)
	}
	if got := itemOf(t, l, drivers.ComponentBIOS); got.Version != "9.9.9" {
		t.Fatalf("the driver reads %s after the reset", got.Version)
	}
}

// baselineNoSecondUpdate: while an update runs, StartFirmwareUpdate
// returns a Transient error wrapping ErrUpdateRunning, and the BMC saw
// no second update.
func baselineNoSecondUpdate(t *testing.T, l BaselineLab) {
	gpu := itemOf(t, l, drivers.ComponentGPU)
	h := start(t, l, drivers.FirmwareUpdate{Targets: []string{gpu.ID}, ImageURL: l.ImageURL(drivers.ComponentGPU, "1.2.3")})
	ctx, cancel := ctxFor()
	defer cancel()
	_, err := l.Driver.StartFirmwareUpdate(ctx, l.BMC, drivers.FirmwareUpdate{Targets: []string{gpu.ID}, ImageURL: l.ImageURL(drivers.ComponentGPU, "1.2.4")})
	if !errors.Is(err, drivers.ErrUpdateRunning) || drivers.Classify(err) != drivers.Transient {
		t.Fatalf("second update: %v, want a Transient error wrapping ErrUpdateRunning", err)
	}
	newChecker(realT{t}, l.BMC.Password.Reveal()).checkErr("second StartFirmwareUpdate", err)
	if n := l.UpdatesStarted(); n != 1 {
		t.Fatalf("the BMC accepted %d updates", n)
	}
	if r := follow(t, l, h); r.Status != drivers.StatusDone {
		t.Fatalf("the first update: %+v", r)
	}
}

// baselineBadImage: an image the BMC refuses is Failed with the BMC's
// reason, and nothing changes.
func baselineBadImage(t *testing.T, l BaselineLab) {
	before := l.Versions()
	nic := itemOf(t, l, drivers.ComponentNIC)
	h := start(t, l, drivers.FirmwareUpdate{Targets: []string{nic.ID}, ImageURL: l.BadImageURL})
	r := follow(t, l, h)
	if r.Status != drivers.StatusFailed || r.Message == "" {
		t.Fatalf("bad image: %+v, want Failed with the BMC's message", r)
	}
	l.SystemReset()
	if after := l.Versions(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("versions changed: %v -> %v", before, after)
	}
}

// baselineRebootMidUpdate: the BMC resets during the update: the status
// is InProgress while it does not answer, then Failed (it lost the task),
// and the old version stays.
func baselineRebootMidUpdate(t *testing.T, l BaselineLab) {
	bios := itemOf(t, l, drivers.ComponentBIOS)
	l.RebootMidUpdate()
	h := start(t, l, drivers.FirmwareUpdate{Targets: []string{bios.ID}, ImageURL: l.ImageURL(drivers.ComponentBIOS, "9.9.9")})
	r := follow(t, l, h)
	if r.Status != drivers.StatusFailed || !strings.Contains(r.Message, h) {
		t.Fatalf("after the BMC's reset: %+v, want Failed naming the task", r)
	}
	l.SystemReset()
	if v := l.Versions()[bios.ID]; v != bios.Version {
		t.Fatalf("BIOS %s, want the old %s", v, bios.Version)
	}
}

// baselineBIOS: ApplyBIOS stages (InProgress), the reset applies, then
// it is Done; an attribute the BMC refuses is Failed naming it.
func baselineBIOS(t *testing.T, l BaselineLab) {
	c := newChecker(realT{t}, l.BMC.Password.Reveal())
	want := map[string]string{l.BIOSAttribute: l.BIOSValue}
	r, ok := c.once("ApplyBIOS", func(ctx context.Context) (drivers.Result, error) { return l.Driver.ApplyBIOS(ctx, l.BMC, want) })
	if !ok || r.Status != drivers.StatusInProgress {
		t.Fatalf("ApplyBIOS: %+v, want InProgress (staged for the reset)", r)
	}
	l.SystemReset()
	c.done("ApplyBIOS after the reset", func(ctx context.Context) (drivers.Result, error) { return l.Driver.ApplyBIOS(ctx, l.BMC, want) })
	l.RefuseBIOS(l.RefusedAttribute)
	ctx, cancel := ctxFor()
	defer cancel()
	r, err := l.Driver.ApplyBIOS(ctx, l.BMC, map[string]string{l.RefusedAttribute: "Disabled"})
	c.fails("ApplyBIOS of a refused attribute", r, err)
	if err == nil && !strings.Contains(r.Message, l.RefusedAttribute) {
		t.Fatalf("refused attribute: %q does not name it", r.Message)
	}
}

func createVolume(t *testing.T, l BaselineLab, v drivers.Volume) drivers.Result {
	t.Helper()
	r, ok := newChecker(realT{t}, l.BMC.Password.Reveal()).once("CreateVolume "+v.Name, func(ctx context.Context) (drivers.Result, error) {
		return l.Driver.CreateVolume(ctx, l.BMC, v)
	})
	if !ok {
		t.FailNow()
	}
	return r
}

// baselineRAID: a RAID-1 boot volume is built over two bays, read back
// (by the driver and the lab), asked again it is Done without a second
// build, and deleted.
func baselineRAID(t *testing.T, l BaselineLab) {
	v := drivers.Volume{Name: "os", Level: drivers.RAID1, Drives: []string{l.Bays[0], l.Bays[1]}, Boot: true}
	if r := createVolume(t, l, v); r.Status != drivers.StatusDone {
		t.Fatalf("CreateVolume: %+v", r)
	}
	if r := createVolume(t, l, v); r.Status != drivers.StatusDone || len(l.Volumes()) != 1 {
		t.Fatalf("CreateVolume again: %+v, volumes %v", r, l.Volumes())
	}
	ctx, cancel := ctxFor()
	defer cancel()
	drives, vols, err := l.Driver.Storage(ctx, l.BMC)
	if err != nil || len(vols) != 1 || len(drives) < 3 {
		t.Fatalf("Storage: %v %v %v", drives, vols, err)
	}
	got := vols[0]
	members := l.Volumes()[got.ID]
	if got.Name != "os" || got.Level != drivers.RAID1 || !got.Boot || !slices.Equal(got.Drives, v.Drives) || len(members) != 2 {
		t.Fatalf("volume %+v, the controller has %v", got, l.Volumes())
	}
	r, err := l.Driver.DeleteVolume(ctx, l.BMC, got.ID)
	if err != nil || r.Status != drivers.StatusDone || len(l.Volumes()) != 0 {
		t.Fatalf("DeleteVolume: %+v %v, volumes %v", r, err, l.Volumes())
	}
}

// baselineRAIDRefused: layouts the controller cannot build are Failed
// with its reason, and nothing is built.
func baselineRAIDRefused(t *testing.T, l BaselineLab) {
	b := l.Bays
	if r := createVolume(t, l, drivers.Volume{Name: "os", Level: drivers.RAID1, Drives: []string{b[0], b[1]}}); r.Status != drivers.StatusDone {
		t.Fatalf("CreateVolume: %+v", r)
	}
	for _, v := range []drivers.Volume{
		{Name: "one", Level: drivers.RAID1, Drives: []string{b[2]}},
		{Name: "taken", Level: drivers.RAID1, Drives: []string{b[1], b[2]}},
		{Name: "nobay", Level: drivers.RAID1, Drives: []string{b[2], "99"}},
		{Name: "huge", Level: drivers.RAID0, Drives: []string{b[2]}, SizeBytes: 1 << 62},
		{Name: "boot2", Level: drivers.RAID0, Drives: []string{b[2]}, Boot: true},
	} {
		r := createVolume(t, l, v)
		if r.Status != drivers.StatusFailed || !strings.Contains(r.Message, v.Name) {
			t.Errorf("%+v: %+v, want Failed naming the volume and why", v, r)
		}
	}
	if n := len(l.Volumes()); n != 1 {
		t.Fatalf("%d volumes, want the first only", n)
	}
}

// baselineBadHandle: a handle that is not a task monitor is refused
// without a request.
func baselineBadHandle(t *testing.T, l BaselineLab) {
	ctx, cancel := ctxFor()
	defer cancel()
	for _, h := range []string{"", "http://elsewhere/x", strings.Repeat("/redfish/v1/x", 100)} {
		r, err := l.Driver.FirmwareUpdateStatus(ctx, l.BMC, h)
		newChecker(realT{t}, l.BMC.Password.Reveal()).fails("FirmwareUpdateStatus("+h[:min(len(h), 20)]+")", r, err)
	}
}
