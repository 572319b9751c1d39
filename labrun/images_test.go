package labrun_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/labimage"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestExampleImageIsTheLabImage: the example's custom image (images.yaml)
// carries the SHA-256 and size of the lab image sim/labimage generates
// for it, so the example never drifts from what the demo's lab writes;
// and WriteLabImages writes exactly that content.
func TestExampleImageIsTheLabImage(t *testing.T) {
	d := designtest.Example(t)
	im := d.Images["gpu-golden"]
	if im == nil || im.Spec.Custom == nil {
		t.Fatal("the example has no custom Image gpu-golden")
	}
	c := im.Spec.Custom
	if c.Size != 12<<20 || c.Format != "ddraw" || c.BaseImage != "ubuntu/jammy" || c.Source.File != "gpu-golden.ddraw" || im.Arch() != "amd64/generic" {
		t.Errorf("gpu-golden: size %d, format %s, base %s, file %s, arch %s", c.Size, c.Format, c.BaseImage, c.Source.File, im.Arch())
	}
	if want := labimage.SHA256("gpu-golden", im.Arch(), c.Size); c.Source.SHA256 != want {
		t.Errorf("images.yaml says sha256 %s, the lab image is %s", c.Source.SHA256, want)
	}
	if got := d.ImageOf(d.Nodes["r01-gpu01"]); got != im {
		t.Errorf("r01-gpu01 (compute-gpu) deploys %v, want gpu-golden", got)
	}
	dir := t.TempDir()
	if err := labrun.WriteLabImages(d, dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "gpu-golden.ddraw"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != c.Source.SHA256 || int64(len(b)) != c.Size {
		t.Errorf("the written file: %d bytes, sha256 %x", len(b), sum)
	}
}

// TestAuditImagesCountsAnotherImage: a GPU node and a compute node of the
// example are deployed; the lab's audit counts both with their design's
// image (the GPU node's custom image uploaded once, complete, by the
// region's count). Against designs that say otherwise (the custom image
// with another content; the compute node on noble) the same lab's
// machines run another image, and the audit names them.
func TestAuditImagesCountsAnotherImage(t *testing.T) {
	d := designtest.Example(t)
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: 0.001, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	e, err := env.Engine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	nodes := []string{"r01-cmp01", "r01-gpu01"}
	for _, req := range []record.Request{{Action: record.ActionPrepareSite}, {Action: record.ActionDeployNodes,
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: nodes}}}}} {
		if task := submitWait(t, e, req); task.Status != record.TaskSucceeded {
			t.Fatalf("%s: %s (%s)", req.Action, task.Status, task.Message)
		}
	}
	a := labrun.AuditImages(env.Lab, d)
	if a.Matched != 2 || a.Custom != 1 || len(a.Wrong) != 0 || len(a.Regions) != 1 {
		t.Fatalf("audit: %+v, want 2 matched (1 custom), none wrong, one region", a)
	}
	r := a.Regions[0]
	sha := d.Images["gpu-golden"].Spec.Custom.Source.SHA256
	if len(r.Uploaded) != 1 || !r.Uploaded[0].Complete || r.Uploaded[0].SHA256 != sha || r.Uploaded[0].Held != 12<<20 ||
		r.Stats.Creates != 1 || r.Stats.Chunks != 3 || r.Stats.BytesReceived != 12<<20 {
		t.Errorf("region %s: %+v, %+v", r.Site, r.Uploaded, r.Stats)
	}

	other := designtest.Example(t) // what a design saying otherwise counts
	other.Images["gpu-golden"].Spec.Custom.Source.SHA256 = labimage.SHA256("gpu-golden-v2", "amd64/generic", 12<<20)
	other.Nodes["r01-cmp01"].Spec.Platform.Image = "noble"
	a = labrun.AuditImages(env.Lab, other)
	if a.Matched != 0 || len(a.Wrong) != 2 {
		t.Fatalf("audit against another design: %+v, want both machines wrong", a)
	}
	cmp, gpu := a.Wrong[0], a.Wrong[1]
	if cmp.Node != "r01-cmp01" || cmp.Got != "ubuntu/jammy" || cmp.Want != "ubuntu/noble" {
		t.Errorf("compute node: %+v", cmp)
	}
	if gpu.Node != "r01-gpu01" || gpu.Got != "custom/gpu-golden" || gpu.Want != gpu.Got || gpu.GotSHA256 != sha || gpu.WantSHA256 == sha {
		t.Errorf("GPU node: %+v", gpu)
	}
}

func submitWait(t *testing.T, e interface {
	Submit(context.Context, record.Request) (record.Task, error)
	Wait(context.Context, string) (record.Task, error)
}, req record.Request) record.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req.Requester = "test"
	task, err := e.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if task, err = e.Wait(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	return task
}
