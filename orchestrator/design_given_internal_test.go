package orchestrator

import (
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestEngineUsesGivenDesign: the design its caller decoded (Config.Design,
// DesignRev) is the one the engine reads for that revision, not a second
// copy decoded from the store; another revision is decoded from the store.
func TestEngineUsesGivenDesign(t *testing.T) {
	store := memory.New()
	d := designtest.Example(t)
	raw, id, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutRevision(t.Context(), statestore.Revision{ID: id, Design: raw, Counts: d.Counts()}); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Store: store, Design: d, DesignRev: id})
	if err != nil {
		t.Fatal(err)
	}
	got, rev, err := e.design(t.Context(), id)
	if err != nil || got != d || rev != id {
		t.Errorf("revision %s: got a copy of its own (%v, %q, %v), want the given design", id, got == d, rev, err)
	}
	other, err := New(Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err = other.design(t.Context(), id)
	if err != nil || got == d || len(got.Nodes) != len(d.Nodes) {
		t.Errorf("without a given design: %v (same pointer %v)", err, got == d)
	}
}
