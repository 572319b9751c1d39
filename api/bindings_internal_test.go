package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
)

func copyDesign(t *testing.T, d *design.Design) *design.Design {
	t.Helper()
	raw, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	out := &design.Design{}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCredentialChanges: with no current revision every binding is new;
// the same design changes none; two nodes swapping BMC addresses send no
// credential anywhere new.
func TestCredentialChanges(t *testing.T) {
	d := designtest.Example(t)
	all := strings.Join(credentialChanges(nil, d), "\n")
	for _, want := range []string{"maas.url", "maas.apiKey", "drivers.server", "drivers.oob", "node r01-cmp01", `secret "kubeadm-join-token"`} {
		if !strings.Contains(all, want) {
			t.Errorf("first design: no change names %q:\n%s", want, all)
		}
	}
	if c := credentialChanges(d, copyDesign(t, d)); len(c) != 0 {
		t.Errorf("the same design: %v", c)
	}
	sw := copyDesign(t, d)
	a, b := sw.Nodes["r01-cmp01"], sw.Nodes["r01-cmp02"]
	a.Spec.OOB.Address, b.Spec.OOB.Address = b.Spec.OOB.Address, a.Spec.OOB.Address
	if c := credentialChanges(d, sw); len(c) != 0 {
		t.Errorf("two nodes swapping BMC addresses: %v", c)
	}
	// A node removed is no new binding either.
	rm := copyDesign(t, d)
	delete(rm.Nodes, "r01-cmp01")
	if c := credentialChanges(d, rm); len(c) != 0 {
		t.Errorf("a node removed: %v", c)
	}
}

// TestSwitchCredentialChanges: a fabric switch's password sent to a new
// address, driver or as another reference needs the admin role like a
// BMC's; the same fabric, or a switch without a password, does not.
func TestSwitchCredentialChanges(t *testing.T) {
	d := designtest.Example(t)
	names := designtest.Fabric(d, "ovs", nil)
	sw := d.Site.Spec.Fabric.Switches[names[0]]
	sw.Password = "secret:leaf-password"
	d.Site.Spec.Fabric.Switches[names[0]] = sw
	if c := strings.Join(credentialChanges(nil, d), "\n"); !strings.Contains(c, "fabric switch lab/"+names[0]) {
		t.Errorf("first design: no change names the switch:\n%s", c)
	}
	if c := credentialChanges(d, copyDesign(t, d)); len(c) != 0 {
		t.Errorf("the same design: %v", c)
	}
	for what, edit := range map[string]func(d *design.Design){
		"address": func(d *design.Design) {
			s := d.Site.Spec.Fabric.Switches[names[0]]
			s.Address = "tcp:203.0.113.9:6640"
			d.Site.Spec.Fabric.Switches[names[0]] = s
		},
		"driver": func(d *design.Design) { d.Site.Spec.Drivers.Network = "my-plugin" },
		"password": func(d *design.Design) {
			s := d.Site.Spec.Fabric.Switches[names[0]]
			s.Password = "secret:other"
			d.Site.Spec.Fabric.Switches[names[0]] = s
		},
	} {
		next := copyDesign(t, d)
		edit(next)
		if c := strings.Join(credentialChanges(d, next), "\n"); !strings.Contains(c, "fabric switch lab/"+names[0]) {
			t.Errorf("the switch's %s changed: %q", what, c)
		}
	}
}

// TestSwitchCredentialToFirstSitesDriver: serve's one network driver is
// the first Site's, and it gets every Site's switch passwords: changing
// the first Site's driver sends another Site's switch password to the
// new driver, even when the first Site's own switches have none.
func TestSwitchCredentialToFirstSitesDriver(t *testing.T) {
	d := designtest.TwoSites(t)
	designtest.Fabric(d, "ovs", nil)
	first := d.Site.Metadata.Name
	var other *design.Site
	for _, name := range d.SiteNames() {
		if name != first {
			other = d.SiteNamed(name)
		}
	}
	if other == nil || !d.Site.HasFabric() {
		t.Fatalf("the two-site example: first Site %s has a fabric %v, another Site %v", first, d.Site.HasFabric(), other)
	}
	if other.Spec.Fabric.Switches == nil {
		other.Spec.Fabric.Switches = map[string]design.Switch{}
	}
	other.Spec.Fabric.Switches["spine-other"] = design.Switch{Address: "tcp:192.0.2.7:6640", Password: "secret:other-switch"}
	for name, sw := range d.Site.Spec.Fabric.Switches {
		sw.Password = ""
		d.Site.Spec.Fabric.Switches[name] = sw
	}
	next := copyDesign(t, d)
	next.Site.Spec.Drivers.Network = "my-plugin"
	want := "fabric switch " + other.Metadata.Name + "/spine-other"
	if c := strings.Join(credentialChanges(d, next), "\n"); !strings.Contains(c, want) {
		t.Errorf("the first Site's driver changed to my-plugin, which gets %s's password: %q lacks %q", other.Metadata.Name, c, want)
	}
	if c := credentialChanges(d, copyDesign(t, d)); len(c) != 0 {
		t.Errorf("the same design: %v", c)
	}
}
