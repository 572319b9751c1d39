package ovs_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/sim/ovs"
	"github.com/slipway-dev/slipway/sim/ovs/ovstest"
)

// Two namespaces on the same VLAN of a netdev bridge reach each other;
// on different VLANs in the same subnet they do not (only the switch's
// L2 isolation stops them).
func TestVLANIsolationWithRealPackets(t *testing.T) {
	s := ovstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.AddBridge(ctx, "br0"); err != nil {
		t.Fatal(err)
	}
	var ns [3]string
	for i, tag := range []string{"tag=10", "tag=10", "tag=20"} {
		n, err := s.NewNetns("h")
		if err != nil {
			t.Fatal(err)
		}
		ns[i] = n
		port := []string{"p1", "p2", "p3"}[i]
		peer, err := s.Cable(ctx, "br0", port, n, tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Addr(ctx, n, peer, []string{"10.9.0.1/24", "10.9.0.2/24", "10.9.0.3/24"}[i]); err != nil {
			t.Fatal(err)
		}
	}
	if !s.Ping(ctx, ns[0], "10.9.0.2", 5*time.Second) {
		t.Error("same VLAN (10): 10.9.0.1 does not reach 10.9.0.2")
	}
	if n, out := s.PingCount(ctx, ns[0], "10.9.0.3", 3, 5*time.Second); n != 0 {
		t.Errorf("VLAN 10 reaches VLAN 20 (%d answers): %s", n, out)
	}
	// The real tools see what was set.
	if out, err := s.Vsctl(ctx, "get", "port", "p3", "tag"); err != nil || strings.TrimSpace(out) != "20" {
		t.Errorf("ovs-vsctl get port p3 tag: %q, %v", out, err)
	}
	if out, err := s.Ofctl(ctx, "show", "br0"); err != nil || !strings.Contains(out, "(p1)") {
		t.Errorf("ovs-ofctl show br0: %q, %v", out, err)
	}
}

// Close stops both daemons (by PID), deletes every namespace it made and
// removes its files; a second Close is a no-op.
func TestCloseRemovesEverything(t *testing.T) {
	ovstest.Require(t)
	short, err := os.MkdirTemp("", "ovs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(short)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := ovs.Start(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddBridge(ctx, "br0"); err != nil {
		s.Close()
		t.Fatal(err)
	}
	ns, err := s.NewNetns("h")
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	if _, err := s.Cable(ctx, "br0", "p1", ns); err != nil {
		s.Close()
		t.Fatal(err)
	}
	pids := s.PIDs()
	if len(pids) != 2 {
		t.Fatalf("PIDs %v, want ovsdb-server and ovs-vswitchd", pids)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("pid %d still runs after Close", pid)
		}
	}
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{ns, s.NS} {
		if strings.Contains(string(out), n) {
			t.Errorf("namespace %s left after Close: %s", n, out)
		}
	}
	left, _ := os.ReadDir(short)
	if len(left) != 0 {
		t.Errorf("files left after Close: %v", left)
	}
}

// Start in a directory whose socket path is too long fails saying so.
func TestStartLongPath(t *testing.T) {
	ovstest.Require(t)
	_, err := ovs.Start(context.Background(), "/tmp/"+strings.Repeat("d", 120))
	if err == nil || !strings.Contains(err.Error(), "shorter directory") {
		t.Fatalf("err %v, want the socket path refused", err)
	}
}
