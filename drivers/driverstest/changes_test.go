package driverstest_test

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/drivers/fake"
)

func fakeChangesLab(d *fake.Server) driverstest.ChangesLab {
	return driverstest.ChangesLab{Driver: d, Site: "site-1", Node: node(), State: func(id string) string {
		for _, m := range d.Machines() {
			if m.MachineID == id {
				return m.State
			}
		}
		return ""
	}}
}

func TestFakeChanges(t *testing.T) {
	for _, s := range scripts {
		t.Run(s.name, func(t *testing.T) {
			driverstest.RunChanges(t, func(*testing.T) driverstest.ChangesLab { return fakeChangesLab(fake.NewServer(s.script)) })
		})
	}
}

// TestChangesAt: a driver that reports changes is its own; one that does
// not, or none, has none.
func TestChangesAt(t *testing.T) {
	f := fake.NewServer(fake.Script{})
	if ch, ok := drivers.ChangesAt(t.Context(), f, "site-1"); !ok || ch != drivers.ServerChanges(f) {
		t.Errorf("the fake: %v %v", ch, ok)
	}
	for _, srv := range []drivers.Server{struct{ drivers.Server }{f}, nil} {
		if _, ok := drivers.ChangesAt(t.Context(), srv, "site-1"); ok {
			t.Errorf("%T: reports changes, want none", srv)
		}
	}
}
