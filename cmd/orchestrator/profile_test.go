package main

import "testing"

// TestServePprofLoopbackOnly: profiles name what the process holds, so
// they are served on loopback only.
func TestServePprofLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:6060", "localhost:0"} {
		if err := servePprof(addr); err == nil {
			t.Errorf("servePprof(%q) served", addr)
		}
	}
	if err := servePprof("127.0.0.1:0"); err != nil {
		t.Errorf("loopback refused: %v", err)
	}
}
