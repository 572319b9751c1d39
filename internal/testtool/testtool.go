// Package testtool finds the third-party tools tests run (validators such
// as netplan, cloud-init and shellcheck; curl and tar for the bootstrap
// script): in CI (env CI set) a missing tool fails the test, elsewhere it
// skips it.
package testtool

import (
	"bytes"
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

// FreePorts are n loopback TCP ports that were free a moment ago.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
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
