package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestServePprof: --pprof refuses an address that is not loopback, and
// serves CPU profiles and execution traces on one that is.
func TestServePprof(t *testing.T) {
	if err := servePprof("0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a wildcard address: %v, want refused", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := servePprof(addr); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/trace?seconds=0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "go 1.") || !strings.Contains(string(b), "trace") {
		t.Errorf("/debug/pprof/trace: %d %q, want an execution trace", resp.StatusCode, b)
	}
}
