package sitemux

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
)

// A Site's changes are reached through the multiplexer (drivers.ChangesAt)
// and read from that Site's provisioner only; a Site without an endpoint,
// whose driver reports no changes, or unknown has none.
func TestSiteChangesRouteToTheSite(t *testing.T) {
	a, b := fake.NewServer(fake.Script{}), fake.NewServer(fake.Script{})
	s, err := New(map[string]Site{"a": {Driver: a}, "b": {Driver: b}, "c": {Driver: Unbound{Site: "c"}},
		"d": {Driver: &stub{name: "d"}}}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ch, ok := drivers.ChangesAt(ctx, s, "b")
	if !ok {
		t.Fatal("site b: no changes reader")
	}
	first, err := ch.Changes(ctx, "")
	if err != nil || !first.Reset {
		t.Fatalf("first: %+v %v", first, err)
	}
	m := b.AddMachine(drivers.Machine{})
	got, err := ch.Changes(ctx, first.Cursor)
	if err != nil || len(got.Machines) != 1 || got.Machines[0] != m.MachineID {
		t.Fatalf("after a machine came at site b: %+v %v", got, err)
	}
	if n := len(a.Calls()); n != 0 {
		t.Errorf("site a's provisioner saw %+v: the read went to the wrong site", a.Calls())
	}
	for _, site := range []string{"c", "d", "nope"} {
		if _, ok := drivers.ChangesAt(ctx, s, site); ok {
			t.Errorf("site %s: a changes reader, want none", site)
		}
	}
}
