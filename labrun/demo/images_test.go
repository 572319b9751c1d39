package demo

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/labrun"
)

// TestRunFailsOnAnotherImage: a run whose nodes the lab counts all
// deployed is not OK when the lab's image audit counts a machine running
// another image than its design's (the demo then exits non-zero), and
// the summary names the machine.
func TestRunFailsOnAnotherImage(t *testing.T) {
	run := Run{Nodes: 2, Deployed: 2, Images: &ImageCount{ImageAudit: labrun.ImageAudit{Matched: 2, Custom: 1}}}
	if !run.OK() {
		t.Fatal("a run with every machine on its design's image is not OK")
	}
	run.Images.Matched = 1
	run.Images.Wrong = []labrun.WrongImage{{Node: "r01-gpu01", Want: "custom/gpu-golden", WantSHA256: "aa", Got: "ubuntu/jammy"}}
	if run.OK() || run.WrongImages() != 1 {
		t.Fatalf("a run with a machine on another image: OK %v, %d wrong", run.OK(), run.WrongImages())
	}
	var out bytes.Buffer
	run.Summary(&out)
	if !strings.Contains(out.String(), "WRONG IMAGE r01-gpu01 runs ubuntu/jammy") || !strings.Contains(out.String(), ", 1 another (counted by the lab)") {
		t.Errorf("summary:\n%s", out.String())
	}
}
