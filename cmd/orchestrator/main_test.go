// The labs these tests start in-process serve Redfish and gNMI over TLS
// on loopback, and each engine opens new connections to them: under -race
// the handshakes' post-quantum key exchange (X25519MLKEM768, Go's default)
// costs CPU that checks nothing here (the tests check trust, pinning and
// refusals, not the key exchange), so this test binary offers the classic
// curves only. The binary the process tests build keeps Go's defaults.
//
//go:debug tlsmlkem=0
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	secretstore "github.com/slipway-dev/slipway/secrets/store"
)

// testParallel is how many of the package's parallel tests run at once
// unless -test.parallel says otherwise. Those tests (t.Parallel) each
// start a lab, serve or etcd of their own, mostly as processes, and
// mostly wait: on the lab's scaled phases, leases, kills and resumes.
// go test's default (GOMAXPROCS, 2 on a small machine) would run them
// nearly one after another.
const testParallel = 4

// clearedEnv is the remote mode's environment (remote.go) and the secret
// store's key: the CLI follows them, so the tests start from none.
// Clearing them once for the whole test process, instead of with t.Setenv
// in each test, lets those tests run in parallel (t.Setenv forbids it); a
// test that sets one does so with t.Setenv and is not parallel.
var clearedEnv = []string{envServer, envToken, envCAFile, secretstore.KeyEnv}

// TestMain clears clearedEnv, raises -test.parallel to testParallel when
// it is not given, runs the tests, and removes what they shared: the
// generated 10,000-node site, the built binary and the example demo's
// state.
func TestMain(m *testing.M) {
	for _, name := range clearedEnv {
		if err := os.Unsetenv(name); err != nil {
			fmt.Fprintln(os.Stderr, "unset", name+":", err)
			os.Exit(2)
		}
	}
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(max(testParallel, runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	if siteDir != "" {
		os.RemoveAll(filepath.Clean(siteDir))
	}
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	if sharedDemo.dir != "" {
		os.RemoveAll(sharedDemo.dir)
	}
	os.Exit(code)
}
