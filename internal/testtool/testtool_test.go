package testtool

import (
	"fmt"
	"net"
	"testing"
)

// TestFreePortsAvoidTheEphemeralRange: the ports are free, distinct and,
// where the kernel's range leaves room, below it, where no outgoing
// connection takes them.
func TestFreePortsAvoidTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low == 0 {
		t.Fatal("cannot read the ephemeral port range")
	}
	ports := FreePorts(t, 8)
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d handed out twice: %v", p, ports)
		}
		seen[p] = true
		if low > quietPortsFrom+1000 && (p < quietPortsFrom || p >= low) {
			t.Fatalf("port %d is outside [%d, %d)", p, quietPortsFrom, low)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		ln.Close()
	}
}
