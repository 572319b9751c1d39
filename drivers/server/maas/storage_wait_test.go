package maas

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/lab"
	simmaas "github.com/slipway-dev/slipway/sim/maas"
)

// TestStorageBuiltOnceThenCloned: nodes of one hardware profile that
// reach their storage step together build it once; the others wait for
// that build and clone it. The lab holds the answer of the layout request
// 2 s, so every node is at its storage step while the first builds.
// Before, each node that found no machine holding the layout built its
// own (at 100 nodes 44 of them: six requests a node more).
func TestStorageBuiltOnceThenCloned(t *testing.T) {
	t.Parallel()
	d := genDesign(t, 4)
	l, drv := cfgLab(t, d, func(c *lab.Config) {
		c.Faults = &simmaas.Faults{Ops: map[string]simmaas.OpFaults{"POST set_storage_layout": {AnswerLatency: 2 * time.Second}}}
	})
	nodes := networkedNodes(t, l, drv, d)
	layouts, clones := count(l, "POST /machines/{machine}/?op=set_storage_layout"), count(l, "POST /machines/?op=clone")
	slots := engineSlots(2)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() {
			var r drivers.Result
			err := slots(ctx, func(ctx context.Context) (err error) { r, err = drv.ApplyStorage(ctx, n); return err })
			if err != nil || r.Status != drivers.StatusDone {
				t.Errorf("ApplyStorage %s: %+v %v", n.Name, r, err)
			}
		})
	}
	wg.Wait()
	if got := count(l, "POST /machines/{machine}/?op=set_storage_layout") - layouts; got != 1 {
		t.Errorf("%d storage layouts set for %d nodes of one profile, want 1", got, len(nodes))
	}
	if got := count(l, "POST /machines/?op=clone") - clones; got != len(nodes)-1 {
		t.Errorf("%d clones, want %d", got, len(nodes)-1)
	}
	for _, n := range nodes {
		storageAsDesigned(t, l, drv, n)
	}
}
