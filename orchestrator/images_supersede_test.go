package orchestrator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// heldSHA is an image store whose read of content sha waits until
// release is closed (or its sync is stopped).
type heldSHA struct {
	heldContent
	sha string
}

func (h *heldSHA) ImagePath(ctx context.Context, image string, src design.FirmwareImage, size int64) (string, error) {
	if src.SHA256 != h.sha {
		return h.ImageContent.ImagePath(ctx, image, src, size)
	}
	return h.heldContent.ImagePath(ctx, image, src, size)
}

// TestImageSyncNewerVersionSupersedes: a sync of content A is held
// before its upload (its fetch); a sync of content B of the same image
// into the same Site stops it, and B completes. Once A is let go, the
// fake provisioner's newest complete version is still B: A's upload
// never runs after B's (else A, created last, would be the version a
// deploy takes), and A's task says it was superseded.
func TestImageSyncNewerVersionSupersedes(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	h := &heldSHA{heldContent: heldContent{ImageContent: env.cfg.Images, release: make(chan struct{})}, sha: imgSum()}
	env.cfg.Images = h
	e := env.engine(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	syncA, err := e.Submit(ctx, record.Request{Action: record.ActionSyncImages, Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	testtool.WaitUntil(t, func() bool { return h.waiting.Load() >= 1 }, "sync A's upload to be held")
	b := otherContent()
	rev2 := newContentRevision(t, env, b)
	taskB := runTask(t, e, record.Request{Action: record.ActionSyncImages, Revision: rev2})
	close(h.release)
	if taskB.Status != record.TaskSucceeded {
		t.Fatalf("sync of B: %s: %s", taskB.Status, taskB.Message)
	}
	gotA, err := e.Wait(ctx, syncA.ID)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := customView(env.srv)
	if !v.Complete || v.SHA256 != sumHex(b) {
		t.Fatalf("the provisioner's newest complete version %+v: want B's %s", v, sumHex(b))
	}
	if gotA.Status == record.TaskSucceeded || !strings.Contains(gotA.Message, "superseded") {
		t.Fatalf("sync of A: %s: %q: want it stopped, superseded by B", gotA.Status, gotA.Message)
	}
}

// TestImageSyncSupersededUploadAbandoned: a sync of content A held in
// the middle of its upload is stopped by a sync of content B of the same
// image into the same Site: A's upload is abandoned through the
// provisioner (the fake deletes the resource whose only version it was),
// and B, uploaded after, is the newest complete version.
func TestImageSyncSupersededUploadAbandoned(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	e, h, syncA := startHeldSync(ctx, t, env)
	b := otherContent()
	taskB := runTask(t, e, record.Request{Action: record.ActionSyncImages, Revision: newContentRevision(t, env, b)})
	close(h.release)
	if taskB.Status != record.TaskSucceeded {
		t.Fatalf("sync of B: %s: %s", taskB.Status, taskB.Message)
	}
	gotA, err := e.Wait(ctx, syncA.ID)
	if err != nil || gotA.Status == record.TaskSucceeded || !strings.Contains(gotA.Message, "abandoned") {
		t.Fatalf("sync of A: %+v %v: want it stopped, its upload abandoned", gotA, err)
	}
	v, _ := customView(env.srv)
	if st := env.srv.ImageStats(); !v.Complete || v.SHA256 != sumHex(b) || st.Deletes != 1 {
		t.Fatalf("view %+v stats %+v: want B newest complete, A's resource deleted", v, st)
	}
}
