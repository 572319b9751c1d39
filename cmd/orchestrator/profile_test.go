package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

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

// TestServePprofTrace: --pprof serves an execution trace of ?seconds=N
// (where the process's goroutines run and wait).
func TestServePprofTrace(t *testing.T) {
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
