package main

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// testParallel is how many of the package's parallel tests run at once
// unless -test.parallel says otherwise. Those tests (t.Parallel) each
// start a lab, serve or etcd of their own, mostly as processes, and
// mostly wait: on the lab's scaled phases, leases, kills and resumes.
// go test's default (GOMAXPROCS, 2 on a small machine) would run them
// nearly one after another.
const testParallel = 4

// TestMain raises -test.parallel to testParallel when it is not given,
// runs the tests, and removes what they shared: the generated 10,000-node
// site, the built binary and the example demo's state.
func TestMain(m *testing.M) {
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
