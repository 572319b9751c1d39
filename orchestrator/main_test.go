// The lab's Redfish BMCs and gNMI switches serve TLS on loopback, and
// each lab's engine opens new connections to them: under -race the
// handshakes' post-quantum key exchange (X25519MLKEM768, Go's default
// since 1.24) was about a tenth of the package's CPU. The tests check
// what the engine does over TLS (trust, pinning, refusals), not the key
// exchange, so this test binary offers the classic curves only; the
// product keeps Go's defaults.
//
//go:debug tlsmlkem=0
package orchestrator_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// secretEnv are the environment variables the lab's secret resolver
// falls back to (secrets.Resolver reads SLIPWAY_SECRET_<NAME> when the
// store has no value). The preflight tests need them unset; clearing
// them once for the whole test process, instead of with t.Setenv in each
// test, lets those tests run in parallel (t.Setenv forbids it). No test
// of this package sets them.
var secretEnv = []string{"SLIPWAY_SECRET_KUBEADM_JOIN_TOKEN", "SLIPWAY_SECRET_BMC_ADMIN"}

// TestMain clears secretEnv, then runs the tests, testParallel at once
// unless -parallel says otherwise. The tests mostly wait on their labs'
// time-scaled phases, not on a core: at go test's default (GOMAXPROCS,
// 2 here) the package took 307 s under -race, at 4 168 s with less CPU
// in all (270 s against 344: fewer idle pollers). More labs at once
// crowd the labs' IPMI timeouts (150 ms) and stage timeouts: 8 at once
// on a 2-core machine at load 20 failed dozens of tests with BMCs that
// did not answer.
func TestMain(m *testing.M) {
	for _, name := range secretEnv {
		if err := os.Unsetenv(name); err != nil {
			fmt.Fprintln(os.Stderr, "unset", name+":", err)
			os.Exit(2)
		}
	}
	flag.Parse()
	if !flagGiven("test.parallel") {
		if err := flag.Set("test.parallel", strconv.Itoa(testParallel)); err != nil {
			fmt.Fprintln(os.Stderr, "set -parallel:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// testParallel is how many of this package's tests run at once.
const testParallel = 4

func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
