package siteregistry

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

type fakeDesign struct{}

func (fakeDesign) Interfaces(site, host string) ([]string, bool) {
	if site != "dc1" || !strings.HasPrefix(host, "gpu-") {
		return nil, false
	}
	return []string{"gpu0", "gpu1", "eno1"}, true
}

func (fakeDesign) Carries(_, _, iface, _ string) error {
	if iface == "eno1" {
		return errors.New("eno1 is a member of bonded interface bond0")
	}
	return nil
}

func (fakeDesign) Networks() map[string]netip.Prefix {
	return map[string]netip.Prefix{"pxe": netip.MustParsePrefix("10.0.0.0/24")}
}

// A bulk upsert is stored whole or not at all; an overlapping /31 pair,
// a /30 holding a /31 that is not next to it in address order, a stored
// assignment overlapped, a network collision, an unknown node or
// interface, a bad CIDR and a duplicate are each named, all at once.
func TestRoCEUpsert(t *testing.T) {
	ctx := context.Background()
	r, _ := newRegistry(t)
	site, err := r.Create(ctx, Create{Name: "dc1", URL: "http://maas/MAAS", APIKey: key1})
	if err != nil {
		t.Fatal(err)
	}
	ok := []RoCEItem{{"gpu-1", "gpu0", "10.200.0.0/31"}, {"gpu-1", "gpu1", "10.200.0.2/31"}, {"gpu-2", "gpu0", "10.200.0.4/31"}}
	if got, err := r.UpsertRoCE(ctx, site.ID, ok, fakeDesign{}); err != nil || len(got) != 3 {
		t.Fatalf("upsert: %v %v", got, err)
	}
	// Moving gpu-2 gpu0 replaces its assignment (same ID), and frees 10.200.0.4/31.
	moved, err := r.UpsertRoCE(ctx, site.ID, []RoCEItem{{"gpu-2", "gpu0", "10.200.0.6/31"}, {"gpu-2", "gpu1", "10.200.0.4/31"}}, fakeDesign{})
	if err != nil || len(moved) != 2 {
		t.Fatalf("move: %v", err)
	}
	all, _ := r.RoCE(ctx, site.ID, "gpu-2")
	if len(all) != 2 || all[0].IPv4CIDR != "10.200.0.6/31" {
		t.Fatalf("gpu-2's assignments: %+v", all)
	}
	bad := []RoCEItem{
		{"gpu-3", "gpu0", "10.200.0.2/31"}, // 0: overlaps stored gpu-1 gpu1
		{"gpu-3", "gpu1", "10.200.1.0/30"}, // 1: holds item 2 ...
		{"gpu-4", "gpu0", "10.200.1.0/31"}, // 2: ... and item 3 (not adjacent to it in order)
		{"gpu-4", "gpu1", "10.200.1.2/31"}, // 3
		{"gpu-5", "gpu0", "10.0.0.10/31"},  // 4: inside the pxe network
		{"gpu-5", "nic9", "10.200.2.0/31"}, // 5: no such interface
		{"cpu-1", "gpu0", "10.200.3.0/31"}, // 6: no such node in the site
		{"gpu-6", "gpu0", "10.200.4.0/24"}, // 7: not a /31 or /30
		{"gpu-6", "gpu0", "10.200.5.0/31"}, // 8: duplicate of item 7's host and interface
		{"gpu-7", "gpu0", "10.200.6.0/31"}, // 9: fine alone
		{"gpu-8", "eno1", "10.200.7.0/31"}, // 10: an interface the node cannot carry it on
	}
	_, err = r.UpsertRoCE(ctx, site.ID, bad, fakeDesign{})
	var re *RoCEError
	if !errors.As(err, &re) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad upsert: %v", err)
	}
	rules := map[int]string{}
	for _, f := range re.Findings {
		rules[f.Item] += f.Rule + " "
	}
	want := map[int]string{0: "roce-overlap", 1: "roce-overlap roce-overlap", 4: "roce-network", 5: "roce-interface",
		6: "roce-node", 7: "roce-cidr", 8: "roce-duplicate", 10: "roce-carry"}
	for i, w := range want {
		if !strings.Contains(rules[i], w) {
			t.Errorf("item %d: findings %q, want %s (all: %v)", i, rules[i], w, re.Findings)
		}
	}
	if rules[9] != "" {
		t.Errorf("item 9 is fine, found %q", rules[9])
	}
	for _, w := range []string{"gpu-3 gpu0 10.200.0.2/31 overlaps gpu-1 gpu1 10.200.0.2/31 (stored)",
		"gpu-3 gpu1 10.200.1.0/30 overlaps gpu-4 gpu0 10.200.1.0/31 (item 2)", "gpu-3 gpu1 10.200.1.0/30 overlaps gpu-4 gpu1 10.200.1.2/31 (item 3)"} {
		if !strings.Contains(re.Error(), w) {
			t.Errorf("no %q in %v", w, re)
		}
	}
	if all, _ := r.RoCE(ctx, site.ID, ""); len(all) != 4 {
		t.Errorf("a refused upsert stored something: %d assignments, want 4", len(all))
	}
	if err := r.DeleteRoCE(ctx, site.ID, moved[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteRoCE(ctx, site.ID, moved[0].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting twice: %v", err)
	}
}

// Profiles: unique names per site; the site's default profile must exist
// and can't be deleted or renamed away.
func TestProfiles(t *testing.T) {
	ctx := context.Background()
	r, _ := newRegistry(t)
	site, _ := r.Create(ctx, Create{Name: "dc1", URL: "http://maas/MAAS", APIKey: key1})
	if _, err := r.Update(ctx, site.ID, Patch{Policy: &Policy{DefaultProfile: "gpu"}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a default profile that does not exist: %v", err)
	}
	p, err := r.CreateProfile(ctx, site.ID, ProfileSpec{Name: "gpu", Series: "jammy", Kernel: "hwe-22.04", Erase: "secure", RoCE: true,
		PXE: PXEOverride{Interface: "eno1", Network: "pxe"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateProfile(ctx, site.ID, ProfileSpec{Name: "gpu"}); !errors.Is(err, ErrConflict) {
		t.Errorf("a second profile named gpu: %v", err)
	}
	if _, err := r.CreateProfile(ctx, site.ID, ProfileSpec{Name: "x", Kernel: "hwe 22.04; rm -rf /"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a kernel with a shell payload: %v", err)
	}
	if _, err := r.Update(ctx, site.ID, Patch{Policy: &Policy{DefaultProfile: "gpu"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteProfile(ctx, site.ID, p.ID); !errors.Is(err, ErrConflict) {
		t.Errorf("deleting the default profile: %v", err)
	}
	if _, err := r.UpdateProfile(ctx, site.ID, p.ID, ProfileSpec{Name: "gpu2"}); !errors.Is(err, ErrConflict) {
		t.Errorf("renaming the default profile: %v", err)
	}
	if _, err := r.Update(ctx, site.ID, Patch{Policy: &Policy{}}); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteProfile(ctx, site.ID, p.ID); err != nil {
		t.Errorf("deleting it once it is not the default: %v", err)
	}
	if ps, _ := r.Profiles(ctx, site.ID); len(ps) != 0 {
		t.Errorf("%d profiles left", len(ps))
	}
}
