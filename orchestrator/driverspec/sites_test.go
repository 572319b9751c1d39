package driverspec

import (
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
)

// One Site: one spec, the whole design's, named. Two: each Site's spec
// has its own domain and the networks and links of its own nodes, and a
// node's domain is its Site's.
func TestSites(t *testing.T) {
	one := Sites(designtest.Example(t))
	if len(one) != 1 || one[0].Name != "lab" || one[0].Domain != "lab.example.net" {
		t.Fatalf("one Site: %+v", one)
	}
	d := designtest.TwoSites(t)
	specs := Sites(d)
	if len(specs) != 2 || specs[0].Name != "lab" || specs[1].Name != "lab-east" || specs[1].Domain != "east.lab.example.net" {
		t.Fatalf("two Sites: %+v", specs)
	}
	for _, s := range specs {
		if len(s.Subnets) == 0 || s.PXENetwork == "" {
			t.Errorf("site %s: no subnets or PXE network: %+v", s.Name, s)
		}
	}
	if n := Node(d, d.Nodes["r02-cmp01"], ""); n.Domain != "east.lab.example.net" {
		t.Errorf("an east node's domain: %q", n.Domain)
	}
	if n := Node(d, d.Nodes["r01-cmp01"], ""); n.Domain != "lab.example.net" {
		t.Errorf("a lab node's domain: %q", n.Domain)
	}
	if got := d.NodesOfSite("lab-east"); !slices.Equal(got, []string{"r02-cmp01", "r02-cmp02", "r02-gpu01", "r02-gpu02"}) {
		t.Errorf("lab-east's nodes: %v", got)
	}
}
