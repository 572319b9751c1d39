package driverstest

import (
	"context"
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// ChangesLab is a provisioner for the changes suite (drivers.ServerChanges).
type ChangesLab struct {
	Driver drivers.Server // a drivers.ServerChanges, or a wrapper reaching one (drivers.ChangesAt)
	Site   string         // the Site ChangesAt asks for
	Node   drivers.Node   // a node the driver can identify, commission, deploy and release
	// State is the provisioner's own view of a machine's state (read
	// from the provisioner, not through the driver).
	State func(machineID string) string
}

// RunChanges runs the changes conformance suite: the first call (cursor
// "") is Reset with a cursor; every state change the driver makes
// (commission, deploy, release) is reported by Changes after the cursor
// taken before it, with the provisioner's state then different; nothing
// before a cursor is reported again from it. open is called once.
func RunChanges(t *testing.T, open func(t *testing.T) ChangesLab) {
	t.Helper()
	runChanges(realT{t}, func(h tb) ChangesLab { return open(testingT(h)) })
}

func runChanges(h tb, open func(tb) ChangesLab) {
	lab := open(h)
	c := newChecker(h)
	ctx, cancel := ctxFor()
	defer cancel()
	ch, ok := drivers.ChangesAt(ctx, lab.Driver, lab.Site)
	if !ok {
		h.Fatalf("ChangesAt(%s): the driver reports no changes", lab.Site)
	}
	first, err := ch.Changes(ctx, "")
	c.checkErr("Changes(\"\")", err)
	if err != nil || !first.Reset || first.Cursor == "" {
		h.Fatalf("Changes(\"\"): %+v, %v; want Reset with a cursor", first, err)
	}
	m := c.mustIdentify(lab.Driver, lab.Node)
	n := lab.Node
	n.MachineID = m.MachineID
	ref := n.NodeRef
	cursor := first.Cursor
	step := func(what string, call func(context.Context) (drivers.Result, error)) {
		h.Helper()
		before := lab.State(n.MachineID)
		c.mustPoll(what, call)
		if after := lab.State(n.MachineID); after == before {
			h.Fatalf("%s: the provisioner's state stayed %q; the suite needs a change", what, after)
		}
		cursor = changesMust(h, c, ch, cursor, what, n.MachineID)
	}
	step("Commission", func(ctx context.Context) (drivers.Result, error) { return lab.Driver.Commission(ctx, ref) })
	step("Deploy", func(ctx context.Context) (drivers.Result, error) {
		return lab.Driver.Deploy(ctx, n, drivers.Deployment{UserData: []byte("#cloud-config\n{}\n")})
	})
	step("Release", func(ctx context.Context) (drivers.Result, error) {
		return lab.Driver.Release(ctx, ref, drivers.EraseDefault)
	})
}

// changesMust reads Changes from cursor, which must name id (not Reset),
// then again from the answer's cursor, which must not (nothing changed
// since); it answers the newest cursor.
func changesMust(h tb, c *checker, ch drivers.ServerChanges, cursor, what, id string) string {
	h.Helper()
	ctx, cancel := ctxFor()
	defer cancel()
	got, err := ch.Changes(ctx, cursor)
	c.checkErr("Changes after "+what, err)
	if err != nil || got.Reset || !slices.Contains(got.Machines, id) || got.Cursor == "" {
		h.Fatalf("Changes(%q) after %s: %+v, %v; want machine %s, not Reset", cursor, what, got, err, id)
	}
	again, err := ch.Changes(ctx, got.Cursor)
	if err != nil || again.Reset || slices.Contains(again.Machines, id) {
		h.Fatalf("Changes(%q) with nothing changed since %s: %+v, %v; want no machine %s again", got.Cursor, what, again, err, id)
	}
	return again.Cursor
}
