package redfish_test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// countingProxy forwards TCP connections to target and counts them.
type countingProxy struct {
	ln    net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	open  []net.Conn // closed when the test ends (the driver keeps its own)
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.conns.Add(1)
			p.mu.Lock()
			p.open = append(p.open, c)
			p.mu.Unlock()
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.pipe(c, target) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.open {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *countingProxy) pipe(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() { _, _ = io.Copy(up, c); up.Close(); close(done) }()
	_, _ = io.Copy(c, up)
	c.Close()
	<-done
}

// TestConnectionsKept: the driver's calls to one BMC share a connection
// (a handshake or two, not one per call), counted by a TCP proxy in front of the BMC. gofish
// marks its requests Connection: close unless it made the HTTP client
// itself, so each call was a new connection and a new handshake (a tenth
// of the orchestrator tests' CPU, and real BMCs are slow at handshakes).
func TestConnectionsKept(t *testing.T) {
	d, b, s, _ := lab(t, simrf.Options{})
	p := startCountingProxy(t, s.Addr().String())
	b.Port = p.ln.Addr().(*net.TCPAddr).Port
	const calls = 30
	for range calls {
		if _, err := d.PowerStatus(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	// Two at most, whatever the number of calls: the connect's first
	// requests may take a second connection before one is kept.
	if n := p.conns.Load(); n > 2 {
		t.Fatalf("%d connections to the BMC for %d power reads (and one login), want at most 2", n, calls)
	}
	if got := s.Stats().Requests; got < calls {
		t.Fatalf("the BMC counted %d requests, want at least %d", got, calls)
	}
}
