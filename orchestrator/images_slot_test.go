package orchestrator_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// heldContent is an image store whose reads wait until release is
// closed, counting those waiting.
type heldContent struct {
	orchestrator.ImageContent
	waiting atomic.Int32
	release chan struct{}
}

func (h *heldContent) ImagePath(ctx context.Context, image string, src design.FirmwareImage, size int64) (string, error) {
	h.waiting.Add(1)
	select {
	case <-h.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return h.ImageContent.ImagePath(ctx, image, src, size)
}

// TestImageFetchOutsideUploadSlot: four custom images whose content is
// still being fetched hold none of the four upload slots: a standard
// image of the same Site is imported meanwhile (the fake provisioner
// lists it complete while the four fetches wait), then the four upload.
// Each image is synced by a task of its own, the standard one's started
// once the four fetches wait.
func TestImageFetchOutsideUploadSlot(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 5, imgContentOnce(), nil)
	gold := env.d.Images["gpu-golden"]
	for i, n := range env.nodes[:4] {
		im := *gold
		im.Metadata.Name = fmt.Sprintf("gpu-%d", i)
		env.d.Images[im.Metadata.Name] = &im
		env.d.Nodes[n].Spec.Platform.Image = im.Metadata.Name
	}
	delete(env.d.Images, "gpu-golden")
	env.d.Images["std-focal"] = &design.Image{Metadata: design.ObjectMeta{Name: "std-focal"}, Spec: design.ImageSpec{OS: "ubuntu", Release: "focal", Architecture: "amd64/generic"}}
	env.d.Nodes[env.nodes[4]].Spec.Platform.Image = "std-focal"
	env.rev = env.store(t, env.d)
	h := &heldContent{ImageContent: env.cfg.Images, release: make(chan struct{})}
	env.cfg.Images = h
	e := env.engine(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sync := func(image string) record.Task {
		task, err := e.Submit(ctx, record.Request{Action: record.ActionSyncImages, Requester: "test", Revision: env.rev, Options: &record.TaskOptions{Image: image}})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	var tasks []record.Task
	for i := range 4 {
		tasks = append(tasks, sync(fmt.Sprintf("gpu-%d", i)))
	}
	testtool.WaitUntil(t, func() bool { return h.waiting.Load() >= 4 }, "the four fetches to wait")
	tasks = append(tasks, sync("std-focal"))
	focal := false
	testtool.WaitUntil(t, func() bool {
		for _, v := range env.srv.ImageViews() {
			focal = focal || v.Name == "ubuntu/focal" && v.Complete
		}
		return focal
	}, "ubuntu/focal imported while the four fetches wait")
	waiting := h.waiting.Load()
	close(h.release)
	if !focal || waiting != 4 {
		t.Fatalf("the standard image complete %v with %d fetches waiting: want it imported while the four fetches wait", focal, waiting)
	}
	for _, task := range tasks {
		if got, err := e.Wait(ctx, task.ID); err != nil || got.Status != record.TaskSucceeded {
			t.Fatalf("task: %+v %v", got, err)
		}
	}
}
