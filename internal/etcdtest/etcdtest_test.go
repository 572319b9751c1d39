package etcdtest

import (
	"context"
	"net"
	"testing"

	"github.com/slipway-dev/slipway/internal/testtool"
)

// takenFirst makes the next freePorts call hand out port as its first
// port (a member's client port), then picks free ports again.
func takenFirst(t *testing.T, port int) *int {
	calls := 0
	freePorts = func(t testing.TB, n int) []int {
		calls++
		ports := testtool.FreePorts(t, n)
		if calls == 1 {
			ports[0] = port
		}
		return ports
	}
	t.Cleanup(func() { freePorts = testtool.FreePorts })
	return &calls
}

func mustPut(t *testing.T, c *Cluster) {
	t.Helper()
	cl := c.Client(t)
	if _, err := cl.Put(context.Background(), "k", "v"); err != nil {
		t.Fatal(err)
	}
}

// TestStartRetriesATakenPort: a port another process took between
// FreePorts and etcd's bind (the CI failure of 2026-12-04, "bind: address
// already in use") makes Start try new ports instead of failing.
func TestStartRetriesATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	calls := takenFirst(t, ln.Addr().(*net.TCPAddr).Port)
	c := Start(t, 1)
	if *calls != 2 {
		t.Fatalf("ports picked %d times, want 2 (one retry)", *calls)
	}
	mustPut(t, c)
}

// TestStartRefusesAnotherClusterOnItsPort: when the taken port is another
// etcd's client port, that etcd answers; Start must not hand it out as
// the new cluster.
func TestStartRefusesAnotherClusterOnItsPort(t *testing.T) {
	other := Start(t, 1)
	_, port, err := net.SplitHostPort(other.Members[0].ClientURL[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	p, err := net.LookupPort("tcp", port)
	if err != nil {
		t.Fatal(err)
	}
	calls := takenFirst(t, p)
	c := Start(t, 1)
	if *calls != 2 || c.Members[0].ClientURL == other.Members[0].ClientURL {
		t.Fatalf("ports picked %d times, client %s (the other cluster's is %s)", *calls, c.Members[0].ClientURL, other.Members[0].ClientURL)
	}
	mustPut(t, c)
}
