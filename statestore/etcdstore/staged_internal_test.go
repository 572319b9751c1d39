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
	n := fitting(batch, Limits{})
	merged := &writePlan{}
	for _, w := range batch[:n] {
		merged.add(w.plan)
	}
	if n < 2 || !merged.fits(Limits{}) {
		t.Fatalf("%d Writes of 2 records merged; fits: %v", n, merged.fits(Limits{}))
	}
	merged.add(batch[n].plan)
	if merged.fits(Limits{}) {
		t.Errorf("%d Writes merged, but %d fit", n, n+1)
	}
	big := []*pendingWrite{plan(500), plan(1)}
	if n := fitting(big, Limits{}); n != 1 || big[0].plan.fits(Limits{}) {
		t.Errorf("a Write of 500 records: %d merged, fits %v", n, big[0].plan.fits(Limits{}))
	}
}

// TestGroupOps: a plan is applied in transactions of at most 120 writes
// and 1 MiB under etcd's defaults, and larger ones under larger limits.
func TestGroupOps(t *testing.T) {
	var ops []stagedOp
	for i := range 1000 {
		ops = append(ops, stagedOp{Key: fmt.Sprint("k", i), Value: make([]byte, 10<<10)})
	}
	total := 0
	for _, g := range groupOps(ops, Limits{}) {
		size := 0
		for _, op := range g {
			size += len(op.Key) + len(op.Value)
		}
		if len(g) == 0 || len(g) > 120 || size > 1<<20 {
			t.Errorf("a group of %d ops, %d bytes", len(g), size)
		}
		total += len(g)
	}
	if total != len(ops) {
		t.Errorf("%d ops grouped of %d", total, len(ops))
	}
}

// TestLimits: the store keeps a margin under the members' limits, takes
// larger ones, and refuses limits it can't work under.
func TestLimits(t *testing.T) {
	if d := (Limits{}); d.ops() != 120 || d.bytes() != 1<<20 {
		t.Errorf("under etcd's defaults: %d ops, %d bytes", d.ops(), d.bytes())
	}
	big := Limits{MaxTxnOps: 20000, MaxRequestBytes: 16 << 20}
	if big.ops() < 18000 || big.bytes() < 10<<20 {
		t.Errorf("under 20000 ops and 16 MiB: %d ops, %d bytes", big.ops(), big.bytes())
	}
	var ops []stagedOp
	for i := range 1000 {
		ops = append(ops, stagedOp{Key: fmt.Sprint("k", i), Value: []byte("v")})
	}
	if n := len(groupOps(ops, big)); n != 1 {
		t.Errorf("1,000 small writes under 20000 ops: %d groups", n)
	}
	for _, l := range []Limits{{MaxTxnOps: 16}, {MaxRequestBytes: 512 << 10}} {
		if l.Check() == nil {
			t.Errorf("%+v accepted", l)
		}
	}
}
