// Package testtool finds the third-party tools tests run (validators such
// as netplan, cloud-init and shellcheck; curl and tar for the bootstrap
// script): in CI (env CI set) a missing tool fails the test, elsewhere it
// skips it.
package testtool

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Need returns the path of tool, which the Debian package pkg installs.
func Need(t testing.TB, tool, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is needed (CI is set): install the Debian package %s", tool, pkg)
		}
		t.Skipf("%s not found (Debian package %s): skipped", tool, pkg)
	}
	return p
}

// Allocated returns the bytes the process allocates while f runs (after
// a GC): f's own when nothing else in the test binary runs meanwhile.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// WaitUntil polls cond every 10 ms and fails the test when it is not true
// within a minute, saying what was awaited. The minute is a hang guard,
// never a measurement: the wait ends as soon as cond holds.
func WaitUntil(t testing.TB, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within a minute: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SyncBuffer is a bytes.Buffer that goroutines may write while a test
// reads it (logs, a console's output).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// FreePorts are n loopback TCP ports that were free a moment ago. They
// are picked below the kernel's ephemeral range where it leaves room, so
// that no outgoing connection (tests make thousands) can take one before
// the process it is meant for binds it; only another test's pick can.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	for range n {
		ln, err := listenFree()
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// quietPortsFrom is the lowest port FreePorts picks from when the
// ephemeral range starts above it.
const quietPortsFrom = 10000

// listenFree listens on a free port below the ephemeral range (a few
// random tries), or on one the kernel picks.
func listenFree() (net.Listener, error) {
	if low := ephemeralLow(); low > quietPortsFrom+1000 {
		for range 20 {
			port := quietPortsFrom + rand.IntN(low-quietPortsFrom)
			if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				return ln, nil
			}
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// ephemeralLow is the first port of the kernel's ephemeral range, 0 when
// it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil {
		return 0
	}
	return low
}
