package introspection

import "testing"

// TestWarmComputesTheRevision: Warm leaves the design's revision
// computed and checked stored, so a deployment's UserData calls find it
// ready; an unstored design's error is left to UserData.
func TestWarmComputesTheRevision(t *testing.T) {
	e := newEnv(t)
	e.srv.Warm(t.Context(), e.d)
	e.srv.designs.mu.Lock()
	p := e.srv.designs.byPtr[e.d]
	e.srv.designs.mu.Unlock()
	if p == nil || !isDone(p.ready) || p.err != nil {
		t.Fatalf("after Warm: %+v, want the design's revision computed", p)
	}
	_, id, err := e.d.Canonical()
	if err != nil || p.id != id {
		t.Fatalf("after Warm: revision %q, want %q (%v)", p.id, id, err)
	}
	d := *e.d
	site := *d.Site
	site.Spec.Domain = "other.example.net"
	d.Site = &site // not stored
	e.srv.Warm(t.Context(), &d)
	if _, err := e.srv.UserData(t.Context(), &d, "r01-cmp01", "1"); err == nil || !contains(err.Error(), "not stored") {
		t.Errorf("an unstored design warmed, then UserData: %v", err)
	}
}
