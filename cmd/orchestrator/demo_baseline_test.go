package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/labrun/demo"
	"github.com/slipway-dev/slipway/sim/lab"
)

// TestDemoBaselineFromTheLab: `demo -o json` on the example (no switch
// fabric) brings both GPU nodes to their profile's baseline and says what
// changed as the lab's BMCs saw it, before against after: the BIOS
// firmware 2.1.0 -> 2.19.1, the two BIOS settings in effect, nothing
// pending, the RAID-1 volume over bays 0 and 1, exactly one firmware
// update and one system reset that applied it. The floor counts the lab's
// own durations of that work (the update, the volume's build), so the
// wall time stays above it. The same summary carries the GPU nodes'
// custom image as the lab counted it. (The fabric's connectivity and its
// JSON are checked by labrun/demo's TestDemoFabricMatrix, which runs the
// same deployment in Open vSwitch.)
func TestDemoBaselineFromTheLab(t *testing.T) {
	t.Parallel()
	code, out, errs := cli(t, "demo", "--site", exampleSite, "--no-fabric", "-o", "json", "--dashboard", "",
		"--state", filepath.Join(t.TempDir(), "state.db"))
	if code != 0 {
		t.Fatalf("demo -o json: exit %d\n%s%s", code, out, errs)
	}
	var r demo.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON summary (%v): %s", err, out)
	}
	if r.Deployed != r.Nodes || r.Nodes != 8 {
		t.Fatalf("%d of %d deployed", r.Deployed, r.Nodes)
	}
	var nodes []string
	for _, b := range r.Baselines {
		nodes = append(nodes, b.Node)
		checkGPUBaseline(t, b)
		if r.FloorSeconds < b.FloorSeconds {
			t.Errorf("floor %.2fs below %s's baseline floor %.2fs", r.FloorSeconds, b.Node, b.FloorSeconds)
		}
	}
	if !slices.Equal(nodes, []string{"r01-gpu01", "r02-gpu01"}) {
		t.Errorf("baselines of %v, want r01-gpu01 and r02-gpu01", nodes)
	}
	if r.WallSeconds < r.FloorSeconds {
		t.Errorf("wall %.2fs below the floor %.2fs", r.WallSeconds, r.FloorSeconds)
	}
	if r.Fabric != nil {
		t.Errorf("--no-fabric measured a fabric: %+v", r.Fabric)
	}
	checkDemoImages(t, r.Images)
}

// checkGPUBaseline checks one GPU node's changes as the lab counted them.
func checkGPUBaseline(t *testing.T, b demo.BaselineCount) {
	t.Helper()
	fw := b.Lab.Firmware
	if len(fw) != 1 || fw[0].Kind != "bios" || fw[0].From != "2.1.0" || fw[0].To != "2.19.1" {
		t.Errorf("%s firmware changed: %+v, want bios 2.1.0 -> 2.19.1 alone", b.Node, fw)
	}
	want := map[string]string{"UsbControl": "UsbDisabled", "NicBoot2": "NetworkBoot"}
	got := map[string]string{}
	for _, s := range b.Lab.BIOS {
		got[s.Name] = s.To
		if s.From == s.To {
			t.Errorf("%s BIOS %s listed unchanged", b.Node, s.Name)
		}
	}
	if len(got) != 2 || got["UsbControl"] != want["UsbControl"] || got["NicBoot2"] != want["NicBoot2"] {
		t.Errorf("%s BIOS changed: %+v, want %v", b.Node, b.Lab.BIOS, want)
	}
	v := b.Lab.Volumes
	if len(v) != 1 || v[0].Name != "os" || v[0].RAIDType != "RAID1" || !slices.Equal(v[0].Drives, []int{0, 1}) {
		t.Errorf("%s volumes built: %+v, want RAID1 os on bays 0,1", b.Node, v)
	}
	if b.Lab.Pending != 0 || b.Lab.FirmwareUpdates != 1 || b.Lab.SystemResets != 1 || b.Lab.BMCResets != 0 {
		t.Errorf("%s: %d pending, %d updates, %d system resets applying changes, %d BMC resets; want 0, 1, 1, 0",
			b.Node, b.Lab.Pending, b.Lab.FirmwareUpdates, b.Lab.SystemResets, b.Lab.BMCResets)
	}
	// The lab's update (4 min, at the demo's default time scale)
	// and its volume build (200 ms).
	if want := (time.Duration(float64(lab.FirmwareUpdateTime)*demoTimeScale) + 200*time.Millisecond).Seconds(); b.FloorSeconds < want {
		t.Errorf("%s baseline floor %.2fs, want at least the lab's update and volume build, %.2fs", b.Node, b.FloorSeconds, want)
	}
	if b.Seconds < b.FloorSeconds {
		t.Errorf("%s baseline stage %.2fs, below its floor %.2fs", b.Node, b.Seconds, b.FloorSeconds)
	}
	if !strings.Contains(b.Text, "bios firmware 2.1.0 -> 2.19.1") || !strings.Contains(b.Text, "1 firmware update") {
		t.Errorf("%s text: %q", b.Node, b.Text)
	}
}

// checkDemoImages: the GPU nodes' custom image, by the lab's count:
// every machine on its design's image, the region holding gpu-golden
// complete after one sync of 3 chunks.
func checkDemoImages(t *testing.T, im *demo.ImageCount) {
	t.Helper()
	const sha = "daf26e2ff9e81e4fd39ff7668a0cfadd7339c5ab4c345019bce81580af67d155"
	if im == nil || im.Matched != 8 || im.Custom != 3 || len(im.Wrong) != 0 || len(im.Regions) != 1 || len(im.Syncs) != 1 {
		t.Fatalf("images: %+v", im)
	}
	if up := im.Regions[0].Uploaded; len(up) != 1 || up[0].Name != "gpu-golden" || !up[0].Complete || up[0].SHA256 != sha || up[0].Held != 12<<20 ||
		im.Regions[0].Stats.Chunks != 3 || im.Syncs[0].State != "synced" || im.Syncs[0].Seconds <= 0 {
		t.Errorf("region %+v, sync %+v", im.Regions[0], im.Syncs[0])
	}
}
