package etcdstore

import (
	"fmt"
	"testing"

	"github.com/slipway-dev/slipway/statestore"
)

// TestFitting: queued Writes are merged only while one transaction takes
// them all, and a large Write goes alone (staged).
func TestFitting(t *testing.T) {
	s := &Store{prefix: "/p/"}
	w := 0
	plan := func(records int) *pendingWrite {
		var ops []statestore.Op
		for i := range records {
			ops = append(ops, statestore.Put("nodes", fmt.Sprint("w", w, "n", i), []byte("x")))
		}
		w++
		p, err := s.planWrite(t.Context(), append(ops, statestore.Append("events", []byte("e"))))
		if err != nil {
			t.Fatal(err)
		}
		return &pendingWrite{plan: p}
	}
	var batch []*pendingWrite
	for range 100 {
		batch = append(batch, plan(2))
	}
	n := fitting(batch)
	merged := &writePlan{}
	for _, w := range batch[:n] {
		merged.add(w.plan)
	}
	if n < 2 || !merged.fits() {
		t.Fatalf("%d Writes of 2 records merged; fits: %v", n, merged.fits())
	}
	merged.add(batch[n].plan)
	if merged.fits() {
		t.Errorf("%d Writes merged, but %d fit", n, n+1)
	}
	big := []*pendingWrite{plan(500), plan(1)}
	if n := fitting(big); n != 1 || big[0].plan.fits() {
		t.Errorf("a Write of 500 records: %d merged, fits %v", n, big[0].plan.fits())
	}
}

// TestGroupOps: a plan is applied in transactions of at most txnOps
// writes and about txnBytes.
func TestGroupOps(t *testing.T) {
	var ops []stagedOp
	for i := range 1000 {
		ops = append(ops, stagedOp{Key: fmt.Sprint("k", i), Value: make([]byte, 10<<10)})
	}
	total := 0
	for _, g := range groupOps(ops) {
		size := 0
		for _, op := range g {
			size += len(op.Key) + len(op.Value)
		}
		if len(g) == 0 || len(g) > txnOps || size > txnBytes {
			t.Errorf("a group of %d ops, %d bytes", len(g), size)
		}
		total += len(g)
	}
	if total != len(ops) {
		t.Errorf("%d ops grouped of %d", total, len(ops))
	}
}
