package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// netRegistry records the network driver built: its name and Config.
type netRegistry struct {
	settingsRegistry
	name string
	cfg  drivers.Config
	n    int
}

func (r *netRegistry) Network(name string, cfg drivers.Config) (drivers.Network, error) {
	r.name, r.cfg, r.n = name, cfg, r.n+1
	return fake.NewNetwork(fake.Script{}), nil
}

// fabricDesign is the example with a fabric whose first switch has a
// username and a password reference.
func fabricDesign(t *testing.T) (*design.Design, string) {
	d := designtest.Example(t)
	names := designtest.Fabric(d, "fake", func(sw string) string { return "tcp:127.0.0.1:6640/" + sw })
	sw := d.Site.Spec.Fabric.Switches[names[0]]
	sw.Username, sw.Password = "admin", "secret:"+names[0]+"-password"
	d.Site.Spec.Fabric.Switches[names[0]] = sw
	return d, names[0]
}

// siteDrivers builds the network driver the Site names with every
// switch of its fabric (address, username, the password resolved from
// its reference), the form drivers.Switches reads; a password that does
// not resolve is an error naming the switch and the reference, not the
// secret.
func TestNetworkDriverGetsTheFabric(t *testing.T) {
	d, first := fabricDesign(t)
	reg := &netRegistry{}
	resolve := func(ref string) (drivers.Secret, error) { return drivers.NewSecret("pw-of-" + ref), nil }
	if _, err := siteDrivers(reg, d, nil, resolve, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	eps, _, err := drivers.Switches(reg.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if reg.name != "fake" || len(eps) != len(d.Site.Spec.Fabric.Switches) {
		t.Fatalf("network driver %q with %d switches, want fake with %d", reg.name, len(eps), len(d.Site.Spec.Fabric.Switches))
	}
	e := eps[first]
	if e.Address != "tcp:127.0.0.1:6640/"+first || e.Username != "admin" || e.Password.Reveal() != "pw-of-secret:"+first+"-password" {
		t.Errorf("switch %s: %+v", first, e)
	}
	_, err = siteDrivers(&netRegistry{}, d, nil, func(ref string) (drivers.Secret, error) {
		if strings.Contains(ref, "maas") {
			return drivers.NewSecret("key"), nil
		}
		return drivers.Secret{}, errors.New("secret not set")
	}, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "switch "+first) || !strings.Contains(err.Error(), "secret:"+first+"-password") {
		t.Errorf("unresolved switch password: %v", err)
	}
}

// putDesign makes d the store's current revision.
func putDesign(t *testing.T, st statestore.Store, d *design.Design) string {
	t.Helper()
	body, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	id := hex.EncodeToString(sum[:])
	if _, err := st.PutRevision(t.Context(), statestore.Revision{ID: id, Created: time.Now(), Design: body}); err != nil {
		t.Fatal(err)
	}
	return id
}

// The network driver follows applied designs: a revision that changes
// a switch builds it again with the new address; one that changes
// nothing of the fabric keeps it; its read-back side is the current
// driver's.
func TestNetRebindingFollowsTheDesign(t *testing.T) {
	st := memory.New()
	d, first := fabricDesign(t)
	rev := putDesign(t, st, d)
	reg := &netRegistry{}
	resolve := func(ref string) (drivers.Secret, error) { return drivers.NewSecret("pw"), nil }
	name, cfg, err := networkSpec(d, resolve)
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := reg.Network(name, cfg)
	r := newNetRebinding(cur, d, rev, st, zerolog.Nop(), resolve, reg.Network)
	r.every = 0
	if _, ok := drivers.ReaderOf(r); !ok {
		t.Fatal("the rebinding over the fake hides its ReadPorts")
	}
	d.Nodes["r01-cmp01"].Metadata.Labels = map[string]string{"x": "y"} // not the fabric
	putDesign(t, st, d)
	r.network(t.Context())
	if reg.n != 1 {
		t.Fatalf("a design change outside the fabric built the network driver again (%d builds)", reg.n)
	}
	sw := d.Site.Spec.Fabric.Switches[first]
	sw.Address = "tcp:127.0.0.1:7777"
	d.Site.Spec.Fabric.Switches[first] = sw
	putDesign(t, st, d)
	if got := r.network(t.Context()); got == cur || reg.n != 2 {
		t.Fatalf("the switch's new address did not build the driver again (%d builds)", reg.n)
	}
	eps, _, _ := drivers.Switches(reg.cfg)
	if eps[first].Address != "tcp:127.0.0.1:7777" {
		t.Errorf("rebuilt with %s's address %q", first, eps[first].Address)
	}
}
