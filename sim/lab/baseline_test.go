package lab

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// exampleImageSize is the size of the example's lab firmware images
// (redfish.LabImage).
const exampleImageSize = 1 << 20

// TestExampleBaselineImages: every firmware image of the example's
// baseline is the lab's image of its component and version (its SHA-256
// is LabImage's), so a BMC of the lab takes it.
func TestExampleBaselineImages(t *testing.T) {
	d := exampleDesign(t)
	n := 0
	for _, name := range slices.Sorted(maps.Keys(d.HardwareProfiles)) {
		for _, f := range d.HardwareProfiles[name].Spec.Firmware {
			sum := sha256.Sum256(simrf.LabImage(f.Component, f.Version, exampleImageSize))
			if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, f.Image.SHA256) {
				t.Errorf("%s: %s %s: sha256 %s, the lab image's is %s", name, f.Component, f.Version, f.Image.SHA256, got)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("the example has no firmware baseline")
	}
}

// TestBaselineInventory: a machine whose hardware profile has a baseline
// reports, through its Redfish BMC, its own NICs, GPUs and bay drives,
// each at the version the baseline names but the BIOS (the expect
// block's minimum, older than the baseline's: one update), its two bay
// drives without a volume, and BIOS settings other than the baseline's.
// A machine of a profile without one keeps the service's defaults.
func TestBaselineInventory(t *testing.T) {
	d := exampleDesign(t)
	l, err := Start(t.Context(), Config{Design: d, TimeScale: 0.0005, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	gpus := 0
	for _, name := range d.NodeNames() {
		hw := d.Nodes[name].Spec.Hardware
		m := l.Machine(name)
		m.mu.Lock()
		rf := m.rf
		m.mu.Unlock()
		if hw.Model != "PowerEdge XE9680" {
			continue
		}
		gpus++
		if rf == nil {
			t.Fatalf("%s: no Redfish service", name)
		}
		checkInventory(t, name, hw, rf)
		// A real update and a BMC's reset take minutes: the lab scales them
		// like MAAS's phases (they were 2 s and 1 s at every scale).
		if got, want := rf.Durations(), (simrf.Durations{Update: 120 * time.Millisecond, BMCReset: 60 * time.Millisecond}); got.Update != want.Update || got.BMCReset != want.BMCReset {
			t.Errorf("%s: update %s, BMC reset %s at time scale 0.0005; want %s and %s (4 min and 2 min scaled)", name, got.Update, got.BMCReset, want.Update, want.BMCReset)
		}
	}
	if gpus != 2 {
		t.Fatalf("%d GPU nodes in the example, want 2", gpus)
	}
}

func checkInventory(t *testing.T, name string, hw *design.HardwareProfileSpec, rf *simrf.Service) {
	t.Helper()
	kinds := map[string]int{}
	differ := map[string]string{} // component -> version the baseline wants and the machine lacks
	for _, it := range rf.Firmware() {
		kinds[it.Kind]++
		for _, f := range hw.Firmware {
			if f.Component == it.Kind && (len(f.Devices) == 0 || slices.ContainsFunc(f.Devices, func(a string) bool {
				return strings.EqualFold(hw.DeviceAliases[a].Address, it.Device)
			})) && f.Version != it.Version {
				differ[it.ID] = it.Version + " -> " + f.Version
			}
		}
	}
	if want := map[string]int{"bmc": 1, "bios": 1, "nic": 3, "gpu": 8, "drive": 2}; !maps.Equal(kinds, want) {
		t.Errorf("%s: inventory by kind %v, want %v", name, kinds, want)
	}
	if want := map[string]string{"BIOS": "2.1.0 -> 2.19.1"}; !maps.Equal(differ, want) {
		t.Errorf("%s: the baseline differs from the machine at %v, want exactly %v", name, differ, want)
	}
	if v := rf.Volumes(); len(v) != 0 {
		t.Errorf("%s: volumes %+v before any baseline, want none", name, v)
	}
	cur, pending := rf.BIOS()
	for k, want := range hw.BIOS.Attributes {
		if have, ok := cur[k]; !ok || have == want {
			t.Errorf("%s: BIOS %s is %v (known %v), want a default other than the baseline's %s", name, k, have, ok, want)
		}
	}
	if len(pending) != 0 {
		t.Errorf("%s: pending BIOS settings %v", name, pending)
	}
}

// TestBaselineSeenByTheDriver: through the Redfish driver, as the engine
// reads it, a GPU node of the example differs from its profile's
// baseline in exactly one firmware item (the BIOS), its two bay drives
// carry no volume, and every BIOS setting of the baseline differs.
func TestBaselineSeenByTheDriver(t *testing.T) {
	d := exampleDesign(t)
	l, err := Start(t.Context(), Config{Design: d, TimeScale: 0.0005, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const node = "r01-gpu01"
	hw := d.Nodes[node].Spec.Hardware
	drv, bmc := redfishDriver(t, l, l.Machine(node))
	inv, err := drv.FirmwareInventory(t.Context(), bmc)
	if err != nil {
		t.Fatal(err)
	}
	var updates []string
	for _, f := range hw.Firmware {
		devs := map[string]bool{}
		for _, a := range f.Devices {
			devs[strings.ToLower(hw.DeviceAliases[a].Address)] = true
		}
		items := 0
		for _, c := range inv {
			if c.Kind != f.Component || (len(devs) > 0 && !devs[c.Device]) {
				continue
			}
			items++
			if c.Version != f.Version {
				updates = append(updates, c.ID+" "+c.Version+" -> "+f.Version)
			}
		}
		if want := map[string]int{"bios": 1, "gpu": 8, "nic": 2}[f.Component]; items != want {
			t.Errorf("%s firmware: %d items of the inventory, want %d", f.Component, items, want)
		}
	}
	if !slices.Equal(updates, []string{"BIOS 2.1.0 -> 2.19.1"}) {
		t.Errorf("updates the baseline needs: %q, want exactly the BIOS's", updates)
	}
	drives, volumes, err := drv.Storage(t.Context(), bmc)
	if err != nil {
		t.Fatal(err)
	}
	var bays []string
	for _, dr := range drives {
		bays = append(bays, dr.Bay)
	}
	if !slices.Equal(bays, []string{"0", "1"}) || len(volumes) != 0 {
		t.Errorf("drives in bays %v, volumes %+v; want bays 0 and 1, no volume", bays, volumes)
	}
	attrs, err := drv.BIOSAttributes(t.Context(), bmc)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range hw.BIOS.Attributes {
		if have, ok := attrs[k]; !ok || have == want {
			t.Errorf("BIOS %s: %q (known %v), want a value other than the baseline's %q", k, have, ok, want)
		}
	}
}
