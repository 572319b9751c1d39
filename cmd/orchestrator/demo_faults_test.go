package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoSiteFaults: `demo --site DIR --faults FILE` hands the faults to
// the lab like `demo --nodes` does: faults of a node the site lacks stop
// the demo at the lab's start, naming it; a faults file that does not
// parse is a usage error before anything runs.
func TestDemoSiteFaults(t *testing.T) {
	dir := t.TempDir()
	faults := filepath.Join(dir, "faults.json")
	if err := os.WriteFile(faults, []byte(`{"machines": {"r01-cmp01": {"firmware": {"bios": "1.0"}}, "r09-nosuch": {"missingGPUs": 1}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// --no-fabric: these tests are about the lab's faults, not the
	// switches (TestDemoFabricMatrix runs the fabric); without it they
	// would need Open vSwitch and root on every machine make test runs on.
	code, out, errs := cli(t, "demo", "--site", exampleSite, "--no-fabric", "--faults", faults, "--state", filepath.Join(dir, "state.db"), "--time-scale", "0.001")
	if code == exitOK || !strings.Contains(out+errs, "faults name machines the lab does not have: r09-nosuch") {
		t.Errorf("demo with faults of an unknown node: exit %d\n%s%s", code, out, errs)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"machines": {"r01-cmp01": {"swapCables": ["data0"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = cli(t, "demo", "--site", exampleSite, "--no-fabric", "--faults", bad)
	if code != exitUsage || !strings.Contains(errs, "swapCables") {
		t.Errorf("demo with a bad faults file: exit %d\n%s%s", code, out, errs)
	}
}

// TestDemoMissingGPU: the example site with one GPU taken out of
// r01-gpu01 (a lab fault): exactly that node fails, at the as-built
// stage, naming the GPU that is missing and how to go on; the seven
// others deploy (the lab's count).
func TestDemoMissingGPU(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	faults := filepath.Join(dir, "faults.json")
	if err := os.WriteFile(faults, []byte(`{"machines": {"r01-gpu01": {"missingGPUs": 1}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "demo", "--site", exampleSite, "--no-fabric", "--faults", faults, "--state", filepath.Join(dir, "state.db"))
	if code == exitOK {
		t.Fatalf("demo with a GPU missing succeeded:\n%s%s", out, errs)
	}
	if !strings.Contains(out, "7 of 8 nodes deployed, 1 failed, 0 stuck (counted by the lab") {
		t.Errorf("demo summary, want 7 of 8 deployed by the lab's count:\n%s", out)
	}
	var failed []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && strings.HasPrefix(f[0], "r0") && f[2] == "failed" {
			failed = append(failed, line)
		}
	}
	if len(failed) != 1 || !strings.HasPrefix(failed[0], "r01-gpu01  as-built  failed") ||
		!strings.Contains(failed[0], "expected 8 x GPU matching H100, found 7") ||
		!strings.Contains(failed[0], "accept-hardware r01-gpu01") {
		t.Errorf("failed nodes %q, want r01-gpu01 alone at as-built naming the GPUs found and accept-hardware", failed)
	}
	if len(failed) == 1 && !strings.Contains(failed[0], "found 7: missing 0000:db:00.0;") {
		t.Errorf("the missing GPU is not named by its slot (the profile's expect.gpus.addresses; the lab takes out the highest): %s", failed[0])
	}
}
