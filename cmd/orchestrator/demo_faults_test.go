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
	code, out, errs := cli(t, "demo", "--site", exampleSite, "--faults", faults, "--state", filepath.Join(dir, "state.db"), "--time-scale", "0.001")
	if code == exitOK || !strings.Contains(out+errs, "faults name machines the lab does not have: r09-nosuch") {
		t.Errorf("demo with faults of an unknown node: exit %d\n%s%s", code, out, errs)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"machines": {"r01-cmp01": {"swapCables": ["data0"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = cli(t, "demo", "--site", exampleSite, "--faults", bad)
	if code != exitUsage || !strings.Contains(errs, "swapCables") {
		t.Errorf("demo with a bad faults file: exit %d\n%s%s", code, out, errs)
	}
}
