package orchestrator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestImageStatusesCompareArchitecture: a record of the image synced
// for amd64 does not make the same image read synced once the design
// asks arm64 (the provisioner unreadable, so the record alone counts).
func TestImageStatusesCompareArchitecture(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	if task := runTask(t, env.engine(t), record.Request{Action: record.ActionSyncImages}); task.Status != record.TaskSucceeded {
		t.Fatalf("sync: %s: %s", task.Status, task.Message)
	}
	env.cfg.Drivers.Server = fake.NewServer(fake.Script{FailAt: "Images", FailClass: drivers.Permanent})
	e := env.engine(t)
	d, err := design.DecodeRevision(mustRevision(t, env))
	if err != nil {
		t.Fatal(err)
	}
	d.Images["gpu-golden"].Spec.Architecture = "arm64/generic"
	sts, err := e.ImageStatuses(t.Context(), d)
	if err != nil || len(sts) != 1 {
		t.Fatalf("statuses %+v %v", sts, err)
	}
	if st := sts[0]; st.State != orchestrator.ImageAbsent || st.Architecture != "arm64/generic" {
		t.Fatalf("status %+v: want absent for arm64 (the record is of amd64)", st)
	}
}

// stuckChunks is a server driver whose chunk uploads never answer
// before their context ends.
type stuckChunks struct{ *fake.Server }

func (s stuckChunks) UploadImageChunk(ctx context.Context, up drivers.ImageUpload, chunk []byte) (drivers.ImageUpload, error) {
	<-ctx.Done()
	return up, ctx.Err()
}

// TestImageSyncTimeoutNamed: an upload that outlives the images stage's
// timeout fails naming lifecycle.timeouts.images and its value.
func TestImageSyncTimeoutNamed(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	env.cfg.Drivers.Server = stuckChunks{env.srv}
	env.cfg.Timeouts = map[record.Stage]time.Duration{record.StageImages: 300 * time.Millisecond}
	task := runTask(t, env.engine(t), record.Request{Action: record.ActionSyncImages})
	if task.Status != record.TaskFailed || !strings.Contains(task.Message, "lifecycle.timeouts.images (300ms)") {
		t.Fatalf("task %s: %q: want the timeout named", task.Status, task.Message)
	}
}

// TestImageSyncPermanentChunkErrorAbandons: a chunk refused permanently
// for another reason than the checksum (e.g. MAAS's size bound, a 400)
// abandons the upload too: the fake provisioner deletes the resource
// whose only version it was, so nothing half-made is resumed and refused
// again.
func TestImageSyncPermanentChunkErrorAbandons(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	env.srv = fake.NewServer(fake.Script{FailAt: "UploadImageChunk", FailClass: drivers.Permanent})
	env.cfg.Drivers.Server = env.srv
	task := runTask(t, env.engine(t), record.Request{Action: record.ActionSyncImages})
	if task.Status != record.TaskFailed || !strings.Contains(task.Message, "was deleted") {
		t.Fatalf("task %s: %q: want failed, saying the half-made version was deleted", task.Status, task.Message)
	}
	if _, ok := customView(env.srv); ok || env.srv.ImageStats().Deletes != 1 {
		t.Fatalf("stats %+v: want the resource deleted", env.srv.ImageStats())
	}
}

// TestImageStatusesCacheLiveRead: list calls close together (the
// dashboard's 2 s poll, several viewers) read a Site's provisioner once
// (counted by the fake's calls); a sync's end reads it afresh, so the
// list says synced at once.
func TestImageStatusesCacheLiveRead(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	e := env.engine(t)
	for range 3 {
		sts, err := e.ImageStatuses(t.Context(), env.d)
		if err != nil || len(sts) != 1 || sts[0].State != orchestrator.ImageAbsent {
			t.Fatalf("statuses %+v %v", sts, err)
		}
	}
	if n := calls(env.srv, "Images"); n != 1 {
		t.Fatalf("three lists read the provisioner %d times: want once", n)
	}
	if task := runTask(t, e, record.Request{Action: record.ActionSyncImages}); task.Status != record.TaskSucceeded {
		t.Fatalf("sync: %s: %s", task.Status, task.Message)
	}
	before := calls(env.srv, "Images")
	sts, err := e.ImageStatuses(t.Context(), env.d)
	if err != nil || len(sts) != 1 || sts[0].State != record.ImageSynced || calls(env.srv, "Images") != before+1 {
		t.Fatalf("statuses %+v %v after the sync: want synced, read afresh", sts, err)
	}
}
