package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestBenchBaseline: three generated nodes with one update slot in the
// Site: every BMC reaches the baseline by its own count (one update, one
// system reset, settings in effect, the volume), the floor is the three
// updates one after the other at the lab's update time, and the measured
// stage does not beat it (maxParallel held).
func TestBenchBaseline(t *testing.T) {
	code, out, errs := bench(t, "bench-baseline", "--nodes", "3", "--max-parallel", "1", "--time-scale", "0.002", "--json")
	if code != 0 {
		t.Fatalf("bench-baseline: exit %d\n%s%s", code, out, errs)
	}
	var r BaselineResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Nodes != 3 || r.Deployed != 3 || r.AtVersion != 3 || r.BIOSApplied != 3 || r.VolumeBuilt != 3 || r.OneUpdate != 3 ||
		r.OneReset != 3 || r.ResetsDuringUpdate != 0 {
		t.Errorf("counts from the BMCs: %+v", r)
	}
	if want := 3 * r.UpdateSeconds; r.UpdateSeconds <= 0 || math.Abs(r.FloorSeconds-want) > 1e-9 {
		t.Errorf("floor %.2fs, want 3 updates of %.2fs one at a time", r.FloorSeconds, r.UpdateSeconds)
	}
	if r.WallSeconds < r.FloorSeconds || r.PerNodeMax < r.UpdateSeconds+r.VolumeBuildSeconds {
		t.Errorf("wall %.2fs, slowest node %.2fs: below the floor %.2fs or one chain", r.WallSeconds, r.PerNodeMax, r.FloorSeconds)
	}
}

// TestBenchBaselineBounds: settings out of bounds are usage errors.
func TestBenchBaselineBounds(t *testing.T) {
	for _, args := range [][]string{{"--nodes", "0"}, {"--nodes", "2001"}, {"--max-parallel", "0"}, {"--time-scale", "2"}, {"--timeout", "3h"}} {
		code, _, errs := bench(t, append([]string{"bench-baseline"}, args...)...)
		if code != exitUsage || !strings.Contains(errs, args[0]) {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}
