package ovs

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRestartWaitsForItsListener: restarted on a known port,
// ovsdb-server logs nothing of it, and its first start's "listening on
// port" line is still in the log. StartDB took that line as the
// restarted server listening and returned before the TCP listener was
// back: a client dialling then was refused (a flake of
// TestReconnectAfterServerCrash in CI). The port itself is what counts.
func TestRestartWaitsForItsListener(t *testing.T) {
	s := &Switchd{Dir: t.TempDir()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().String()[strings.LastIndexByte(ln.Addr().String(), ':')+1:]
	first := "2026-12-04T15:00:00Z|00002|socket_util|INFO|0:127.0.0.1: listening on port " + port + "\n"
	if err := os.WriteFile(filepath.Join(s.Dir, "ovsdb-server.log"), []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}
	if !s.listens(port) {
		t.Fatal("a listener on the port: not taken as listening")
	}
	ln.Close()
	if s.listens(port) {
		t.Fatal("restarted, nothing listening on the port yet, the first start's line in the log: taken as listening")
	}
	if !s.listens("0") {
		t.Fatal("a first start that logged its ephemeral port: not taken as listening")
	}
}
