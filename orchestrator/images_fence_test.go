package orchestrator_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// fencedStore refuses every write of an image sync record from the
// first chunk's offset on, as a replica's store does once it lost its
// leadership (etcdstore.ErrFenced); the task's own records still go
// through, so that its end says why.
type fencedStore struct {
	statestore.Store
	fenced atomic.Bool
}

var errFencedTest = errors.New("this replica is no longer the leader: its write was refused")

func (s *fencedStore) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	for _, op := range ops {
		if op.Kind == statestore.OpPut && op.Coll == "image_syncs" && bytes.Contains(op.Value, []byte(`"offset":4194304`)) {
			s.fenced.Store(true)
		}
		if op.Coll == "image_syncs" && s.fenced.Load() {
			return nil, errFencedTest
		}
	}
	return s.Store.Write(ctx, ops...)
}

// TestImageSyncStopsWhenFenced: once the per-chunk record write fails
// (a fenced ex-leader), the engine sends no further chunk: the fake
// provisioner counts one chunk of three, the image incomplete there.
func TestImageSyncStopsWhenFenced(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	env.cfg.Store = &fencedStore{Store: env.st}
	e := env.engine(t)
	task := runTask(t, e, record.Request{Action: record.ActionSyncImages})
	v, _ := customView(env.srv)
	if st := env.srv.ImageStats(); st.Chunks != 1 || v.Complete {
		t.Fatalf("stats %+v, image %+v: want the upload stopped after the chunk whose record could not be written", st, v)
	}
	if task.Status == record.TaskSucceeded || !strings.Contains(task.Message, "could not be written") || strings.Contains(task.Message, "refused the uploaded") {
		t.Fatalf("task %s: %q: want it ended on the failed record write, not as a refusal", task.Status, task.Message)
	}
}
