package demo

import (
	"strings"
	"testing"
)

// TestConnectivityVerdict: one ping against the design (a pair that
// should reach each other did not), a cross-VLAN probe that reached, or
// a destroyed node's port outside quarantine each make the verdict FAIL,
// and the text marks the cell; all as the design says is PASS.
func TestConnectivityVerdict(t *testing.T) {
	mk := func() Connectivity {
		return Connectivity{Networks: []NetworkMatrix{{Network: "mgmt", VLAN: 12, Nodes: []string{"a", "b"},
			Addresses: []string{"10.12.0.1", "10.12.0.2"},
			Expected:  [][]bool{{false, true}, {true, false}}, Measured: [][]bool{{false, true}, {true, false}}}},
			CrossVLAN:  []Probe{{From: "a", Via: "pxe", To: "mgmt", Target: "b"}},
			Quarantine: []QuarantinedPort{{Node: "b", Switch: "s", Port: "p", Want: 999, VLAN: 999, OK: true}},
			Pings:      3}
	}
	c := mk()
	c.judge()
	var sb strings.Builder
	c.Text(&sb)
	if !c.Pass || c.Unexpected != 0 || !strings.Contains(sb.String(), "PASS: 3 pings") {
		t.Fatalf("as designed: pass %v, unexpected %d:\n%s", c.Pass, c.Unexpected, sb.String())
	}
	for name, spoil := range map[string]func(*Connectivity){
		"unreached pair":     func(c *Connectivity) { c.Networks[0].Measured[0][1] = false },
		"cross-VLAN reached": func(c *Connectivity) { c.CrossVLAN[0].Measured = true },
		"port not in quarantine": func(c *Connectivity) {
			c.Quarantine[0].VLAN, c.Quarantine[0].OK = 12, false
		},
	} {
		c := mk()
		spoil(&c)
		c.judge()
		var sb strings.Builder
		c.Text(&sb)
		if c.Pass || !strings.Contains(sb.String(), "FAIL") {
			t.Errorf("%s: pass %v:\n%s", name, c.Pass, sb.String())
		}
		if name == "unreached pair" && (c.Unexpected != 1 || !strings.Contains(sb.String(), "no!")) {
			t.Errorf("%s: %d unexpected, cell not marked:\n%s", name, c.Unexpected, sb.String())
		}
	}
}
