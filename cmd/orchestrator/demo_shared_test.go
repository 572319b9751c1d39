package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// sharedDemo is one text demo of the example site without its switch
// fabric (--no-fabric), run by the first test that asks for it and read
// by the others: TestDemo checks its output and what bootdata serves from
// its state, TestInventoryAfterDemo what inventory reads from it. Both
// only read the state it leaves. The fabric is run by labrun/demo's
// TestDemoFabricMatrix (its connectivity, and the Run's JSON that `demo
// -o json` prints); its text by TestConnectivityVerdict.
var sharedDemo struct {
	once      sync.Once
	dir       string // removed by TestMain
	code      int
	out, errs string
}

// exampleDemo answers the shared demo's exit code and output, and its
// state database.
func exampleDemo(t *testing.T) (state string, code int, out, errs string) {
	t.Helper()
	sharedDemo.once.Do(func() {
		dir, err := os.MkdirTemp("", "slipway-demo-test-")
		if err != nil {
			sharedDemo.code, sharedDemo.errs = -1, err.Error()
			return
		}
		sharedDemo.dir = dir
		var o, e bytes.Buffer
		sharedDemo.code = run(t.Context(), []string{"demo", "--site", exampleSite, "--no-fabric",
			"--state", filepath.Join(dir, "state.db"), "--time-scale", "0.001"}, &o, &e)
		sharedDemo.out, sharedDemo.errs = o.String(), e.String()
	})
	if sharedDemo.dir == "" {
		t.Fatalf("the shared demo's directory: %s", sharedDemo.errs)
	}
	return filepath.Join(sharedDemo.dir, "state.db"), sharedDemo.code, sharedDemo.out, sharedDemo.errs
}
