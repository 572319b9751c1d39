package ovs

import (
	"strings"
	"testing"
)

// parseAddress never panics, accepts only unix: and tcp: addresses
// within the bound, and what it returns parses to itself.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"unix:/run/openvswitch/db.sock", "tcp:127.0.0.1:6640", "tcp:[::1]:6640", "tcp:sw1.example:6640",
		"ssl:1.2.3.4:6640", "unix:rel", "tcp:host", "tcp::1", "tcp:a:99999", ":", "", "unix:/a/../b", "tcp:a b:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseAddress(s)
		if err != nil {
			if got != "" {
				t.Fatalf("%q: error %v with a result %q", s, err, got)
			}
			return
		}
		if len(s) > maxAddress || !(strings.HasPrefix(got, "unix:/") || strings.HasPrefix(got, "tcp:")) {
			t.Fatalf("%q accepted as %q", s, got)
		}
		again, err := parseAddress(got)
		if err != nil || again != got {
			t.Fatalf("%q -> %q -> %q, %v", s, got, again, err)
		}
	})
}

// keptVLANs, reading what a switch's external_ids say, never panics and
// gives only VLANs 1..4094, ascending, each once.
func FuzzKeptVLANs(f *testing.F) {
	for _, s := range []string{"12,100", "", ",", "4095,0,-1,12,12", "99999999999999999999", "1,2,3"} {
		f.Add("trunk", "12", s)
	}
	f.Fuzz(func(t *testing.T, mode, vlan, trunks string) {
		_, v, got := keptVLANs(map[string]string{keyMode: mode, keyVLAN: vlan, keyTrunks: trunks})
		if v < 0 || v > 4094 {
			t.Fatalf("vlan %d", v)
		}
		for i, x := range got {
			if x < 1 || x > 4094 || (i > 0 && got[i-1] >= x) {
				t.Fatalf("trunk %v", got)
			}
		}
	})
}
