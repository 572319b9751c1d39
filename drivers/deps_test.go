package drivers_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSDKDependsOnNothingOfSlipway: the driver SDK is what an external
// driver imports, so it must not pull in the rest of Slipway (the design
// model, the engine): the mapping from the design lives in
// orchestrator/driverspec.
func TestSDKDependsOnNothingOfSlipway(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH to list the package's dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const self = "github.com/slipway-dev/slipway/drivers"
	deps := strings.Fields(string(out))
	found := false
	for _, p := range deps {
		if p == self {
			found = true
			continue
		}
		if strings.HasPrefix(p, "github.com/slipway-dev/slipway/") {
			t.Errorf("package drivers depends on %s: external drivers would import it too; keep it on the engine's side", p)
		}
	}
	if !found {
		t.Fatalf("go list -deps did not list %s itself: %q", self, deps)
	}
}
