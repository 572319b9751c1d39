package gnmi

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestTrunkRangesRead: OpenConfig's trunk-vlans is a union of VLAN IDs
// and ranges ("100..102", as EOS and SONiC report consecutive VLANs);
// a range reads as its VLANs (a port set as planned no longer reads as
// differing, repaired at every reconciliation), a reversed, oversized or
// malformed one as nothing, and overlapping ranges once each.
func TestTrunkRangesRead(t *testing.T) {
	for _, c := range []struct {
		trunk string
		want  []int
		n     int // when want is nil: how many VLANs
	}{
		{`[12, "100..102"]`, []int{12, 100, 101, 102}, 0},
		{`["100..102", "101..103", 5]`, []int{5, 100, 101, 102, 103}, 0},
		{`["7"]`, []int{7}, 0},
		{`["102..100", "1..5000", "a..b", "0..2", ".."]`, nil, 0},
		{`["1..4094", "1..4094", "1..4094"]`, nil, 4094},
	} {
		var e map[string]any
		if err := json.Unmarshal([]byte(`{"ethernet": {"switched-vlan": {"config": {"interface-mode": "TRUNK", "native-vlan": 12, "trunk-vlans": `+c.trunk+`}}}}`), &e); err != nil {
			t.Fatal(err)
		}
		got := readInterface("p1", e).trunk
		if c.want == nil && len(got) != c.n {
			t.Errorf("%s: %d VLANs, want %d", c.trunk, len(got), c.n)
			continue
		}
		if c.want != nil && !slices.Equal(got, c.want) {
			t.Errorf("%s: read %v, want %v", c.trunk, got, c.want)
		}
	}
}
