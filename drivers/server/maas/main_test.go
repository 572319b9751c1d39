package maas

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// labParallel is how many of the package's parallel tests run at once
// unless -test.parallel says otherwise. Those tests (t.Parallel) each
// start a lab of their own and mostly wait: on its phases, and on the
// driver's read cache, which answers a machine's state for 5 s (cache.go),
// so each commissioning the tests poll lasts about 5 s whatever the time
// scale. go test's default (GOMAXPROCS, 2 on a small machine) would run
// them nearly one after another.
const labParallel = 8

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(max(labParallel, runtime.GOMAXPROCS(0))))
	}
	os.Exit(m.Run())
}
