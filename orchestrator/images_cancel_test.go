package orchestrator_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// TestImageSyncCancelStopsUpload (from R2's scratch test): a sync_images
// task is cancelled mid-upload; the sync only it asked for stops (the
// fake provisioner counts one chunk of three, the image incomplete), its
// record says interrupted, and after a restart (simulated: the engine is
// closed, a new one started on the same store) no image reads syncing.
func TestImageSyncCancelStopsUpload(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	tripped, release := make(chan struct{}), make(chan struct{})
	env.cfg.Store = &offsetCrashStore{Store: env.st, onTrip: func() { close(tripped); <-release }}
	e1 := env.engine(t)
	env.cfg.Store = env.st // the next engine's
	task, err := e1.Submit(ctx, record.Request{Action: record.ActionSyncImages, Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-tripped:
	case <-ctx.Done():
		t.Fatal("never mid-upload")
	}
	if _, err := e1.TaskVerb(ctx, task.ID, record.VerbCancel, "test"); err != nil {
		t.Fatal(err)
	}
	if got, err := e1.Wait(ctx, task.ID); err != nil || got.Status != record.TaskCancelled {
		t.Fatalf("task after cancel: %+v %v", got, err)
	}
	close(release)
	var state string
	testtool.WaitUntil(t, func() bool {
		syncs, err := e1.ImageSyncs(ctx)
		if err != nil || len(syncs) != 1 {
			t.Fatalf("records %+v %v", syncs, err)
		}
		state = syncs[0].State
		return state == orchestrator.ImageInterrupted
	}, "the cancelled sync's record to read "+orchestrator.ImageInterrupted)
	v, _ := customView(env.srv)
	if st := env.srv.ImageStats(); st.Chunks != 1 || v.Complete {
		t.Fatalf("stats %+v, image %+v: want the upload stopped after its first chunk", st, v)
	}
	e1.Close()
	e2 := env.engine(t)
	sts, err := e2.ImageStatuses(ctx, env.d)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.State == record.ImageSyncing || s.State == record.ImageSyncPending {
			t.Errorf("image %s in site %s reads %q after the restart, with no sync running", s.Image, s.Site, s.State)
		}
	}
}

// TestImageSyncJoinedTaskNamed (from R2's scratch test): a second
// sync_images task joins the upload a first one runs; the sync's record
// names the second task (its CLI draws the bar and the end), and it ends
// synced, the provisioner holding one complete version.
func TestImageSyncJoinedTaskNamed(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	tripped, release := make(chan struct{}), make(chan struct{})
	cs := &offsetCrashStore{Store: env.st, onTrip: func() { close(tripped); <-release }}
	env.cfg.Store = cs
	e1 := env.engine(t)
	if _, err := e1.Submit(ctx, record.Request{Action: record.ActionSyncImages, Requester: "test"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tripped:
	case <-ctx.Done():
		t.Fatal("never mid-upload")
	}
	b, err := e1.Submit(ctx, record.Request{Action: record.ActionSyncImages, Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for !e1.SyncFollowedBy(b.ID) { // until task B follows the running sync
		if ctx.Err() != nil {
			t.Fatal("task B never followed the running sync")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if gb, err := e1.Wait(ctx, b.ID); err != nil || gb.Status != record.TaskSucceeded {
		t.Fatalf("task B: %+v %v", gb, err)
	}
	sts, err := e1.ImageStatuses(ctx, env.d)
	if err != nil || len(sts) != 1 {
		t.Fatalf("statuses %+v %v", sts, err)
	}
	if s := sts[0]; s.Task != b.ID || s.State != record.ImageSynced {
		t.Fatalf("row %s/%s state %s task %s: want synced, naming task B %s", s.Site, s.Image, s.State, s.Task, b.ID)
	}
	if st := env.srv.ImageStats(); st.Creates != 1 {
		t.Fatalf("stats %+v: want one version", st)
	}
}

// frozenStore takes no write once frozen: what a SIGKILLed serve leaves
// (simulated: the engine goes on in memory, but nothing more is stored).
type frozenStore struct {
	statestore.Store
	frozen atomic.Bool
}

func (s *frozenStore) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	if s.frozen.Load() {
		return nil, errors.New("killed")
	}
	revs, err := s.Store.Write(ctx, ops...)
	for _, op := range ops {
		if err == nil && op.Kind == statestore.OpPut && bytes.Contains(op.Value, []byte(`"offset":4194304`)) {
			s.frozen.Store(true)
		}
	}
	return revs, err
}

// TestImageSyncKilledMarkedInterrupted (simulated kill: nothing is stored
// after the first chunk's record): the next engine's Start records the
// sync left syncing as interrupted (its image.sync event) before the
// resumed task syncs it to its end.
func TestImageSyncKilledMarkedInterrupted(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	fs := &frozenStore{Store: env.st}
	env.cfg.Store = fs
	e1 := env.engine(t)
	env.cfg.Store = env.st // the next engine's
	task, err := e1.Submit(t.Context(), record.Request{Action: record.ActionSyncImages, Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	testtool.WaitUntil(t, fs.frozen.Load, "the store to freeze mid-sync (the kill)")
	e1.Close()
	if syncs, err := e1.ImageSyncs(t.Context()); err != nil || len(syncs) != 1 || syncs[0].State != record.ImageSyncing {
		t.Fatalf("records after the kill %+v %v: want one left syncing", syncs, err)
	}
	e2 := env.engine(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if got, err := e2.Wait(ctx, task.ID); err != nil || got.Status != record.TaskSucceeded {
		t.Fatalf("resumed task: %+v %v", got, err)
	}
	evs, err := e2.Events(ctx, 0, 1000, "", "")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs {
		found = found || ev.Type == record.EventImageSync && strings.Contains(ev.Message, "interrupted (serve stopped")
	}
	if !found {
		t.Fatal("no image.sync event says the sync left syncing was interrupted")
	}
}
