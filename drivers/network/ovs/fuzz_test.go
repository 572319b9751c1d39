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
