package main

import (
	"strings"
	"testing"
)

// TestBenchToolsNotInOperatorBinary: the benchmark tools are
// cmd/slipway-bench's commands; the operator's binary does not know them
// (it had them as hidden commands before).
func TestBenchToolsNotInOperatorBinary(t *testing.T) {
	for _, c := range []string{"bench-introspection", "bench-once", "gen-hostile"} {
		code, _, errs := cli(t, c)
		if code != exitUsage || !strings.Contains(errs, `unknown command "`+c+`"`) {
			t.Errorf("orchestrator %s: exit %d, stderr %q; want %d and unknown command", c, code, errs, exitUsage)
		}
	}
}
