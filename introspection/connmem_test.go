package introspection

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/conntest"

	"github.com/rs/zerolog"
)

// connsHeld is how many connections the memory tests hold open at once.
const connsHeld = 200

// The most one connection that announces a body and sends one byte of it
// may cost the server (heap and stacks): one refused at once, and one
// whose token authenticates, which holds its read buffer (8 KiB), its
// request's state and a goroutine while its body is awaited.
const (
	unauthConnBound = 8 << 10
	authConnBound   = 24 << 10
)

// peakGrowth samples memInUse for about a second and returns the largest
// growth over base.
func peakGrowth(base uint64) uint64 {
	var peak uint64
	for range 25 {
		time.Sleep(40 * time.Millisecond)
		if m := conntest.MemInUse(); m > base && m-base > peak {
			peak = m - base
		}
	}
	return peak
}

// serveOn starts srv's own listener (Serve) on a loopback port and
// returns its address; the server stops when the test ends.
func serveOn(t *testing.T, srv *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// announce opens n connections that each send a report's headers
// announcing length bytes and then one byte of it.
func announce(t *testing.T, addr, tok string, n, length int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	req := fmt.Sprintf("POST /v1/self/actions/a HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{", addr, tok, length)
	for range n {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	return conns
}

// warm sends the requests whose first use fills the server's pools and
// caches, so that the baseline counts them.
func warm(t *testing.T, addr, tok string) {
	t.Helper()
	for _, c := range announce(t, addr, tok, 2, 2) {
		_, _ = c.Write([]byte("}"))
		conntest.StatusOn(c, time.Now().Add(2*time.Second))
	}
}

// TestAnnouncedBodiesCostLittle (issue 33, S3): connections that announce
// a body and send one byte of it cost the introspection listener little
// memory each, whatever length they announce, and are answered at once
// unless their token authenticates: 401 for a body within the limit
// (the token is checked before the body is read), 413 for one over it;
// an authenticated node's body is read as it arrives, not allocated from
// its announced length, and what it held is returned when it goes away.
// Measured from the runtime's own heap and stack counts after a GC.
func TestAnnouncedBodiesCostLittle(t *testing.T) {
	srv, d := boltServer(t, func(c *Config) { c.Log = zerolog.Nop() }) // a log kept in memory would grow with the refusals
	addr := serveOn(t, srv)
	if _, err := srv.UserData(t.Context(), d, "r01-cmp01", "1"); err != nil {
		t.Fatal(err)
	}
	tok := srv.Token("r01-cmp01", "1")
	bogus := strings.Repeat("A", len(tok))
	warm(t, addr, tok)
	for _, tc := range []struct {
		name   string
		tok    string
		length int
		want   int // the answer each gets at once (0: none, the body is awaited)
		bound  uint64
	}{
		{"no token, 256 KiB announced", bogus, 262144, http.StatusRequestEntityTooLarge, unauthConnBound},
		{"no token, within the limit", bogus, maxBody, http.StatusUnauthorized, unauthConnBound},
		{"a node's token, within the limit", tok, maxBody, 0, authConnBound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := conntest.MemInUse()
			baseHeap, baseG := conntest.HeapLive()
			conns := announce(t, addr, tc.tok, connsHeld, tc.length)
			peak := peakGrowth(base)
			t.Logf("%d connections announcing %d bytes: %d bytes in use more at the peak (%d a connection)",
				connsHeld, tc.length, peak, peak/connsHeld)
			if peak > connsHeld*tc.bound*conntest.Slack {
				t.Errorf("%d connections announcing %d bytes grew the memory in use by %d bytes (%d a connection; want at most %d)",
					connsHeld, tc.length, peak, peak/connsHeld, tc.bound)
			}
			deadline := time.Now().Add(2 * time.Second)
			if tc.want == 0 {
				deadline = time.Now().Add(50 * time.Millisecond)
			}
			answered := map[int]int{}
			for _, c := range conns {
				answered[conntest.StatusOn(c, deadline)]++
			}
			if answered[tc.want] != connsHeld {
				t.Errorf("answers (status: connections; 0 none yet) %v, want %d: %d", answered, tc.want, connsHeld)
			}
			for _, c := range conns {
				c.Close()
			}
			// idle workers end a second after their last request
			if left, extra := conntest.Returned(baseHeap, baseG, connsHeld*1024*conntest.Slack); left >= connsHeld*1024*conntest.Slack || extra > 4 {
				t.Errorf("after the connections closed, %d bytes of heap were not returned and %d goroutines more run", left, extra)
			}
		})
	}
}

// TestConnsPerSource (issue 33, S3): a source may hold ConnsPerSource
// connections that have not authenticated a request; the next one from
// it is answered 429 and closed before anything is read, while another
// source is served. A connection whose request authenticates stops
// counting and is kept alive, and one that closes frees its place.
func TestConnsPerSource(t *testing.T) {
	const limit = 4
	srv, d := boltServer(t, func(c *Config) { c.ConnsPerSource = limit })
	addr := serveOn(t, srv)
	if _, err := srv.UserData(t.Context(), d, "r01-cmp01", "1"); err != nil {
		t.Fatal(err)
	}
	tok := srv.Token("r01-cmp01", "1")
	idle := make([]net.Conn, limit)
	for i := range idle {
		idle[i] = conntest.DialFrom(t, "127.0.0.1", addr) // they send nothing
	}
	if st := conntest.StatusOn(conntest.DialFrom(t, "127.0.0.1", addr), time.Now().Add(2*time.Second)); st != http.StatusTooManyRequests {
		t.Fatalf("connection %d from one source: status %d, want 429", limit+1, st)
	}
	if st := conntest.Ask(conntest.DialFrom(t, "127.0.0.2", addr), "/healthz", ""); st != http.StatusOK {
		t.Fatalf("another source: status %d, want 200", st)
	}
	idle[0].Close()
	var freed net.Conn // the closed one's place, once the server saw it go
	for i := 0; i < 40 && freed == nil; i++ {
		c := conntest.DialFrom(t, "127.0.0.1", addr)
		if st := conntest.Ask(c, "/v1/self", tok); st == http.StatusOK {
			freed = c
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if freed == nil {
		t.Fatal("a closed connection's place was not freed within 2 s")
	}
	// freed authenticated on the fast path (GET /v1/self), viaEcho through
	// echo's authenticate (a NoCloud route's token is in its path): neither
	// counts any more, so one more idle connection fits, and the next does
	// not; both are kept alive.
	viaEcho := conntest.DialFrom(t, "127.0.0.1", addr)
	if st := conntest.Ask(viaEcho, "/v1/nocloud/"+tok+"/meta-data", ""); st != http.StatusOK {
		t.Fatalf("meta-data: status %d, want 200", st)
	}
	conntest.DialFrom(t, "127.0.0.1", addr)
	if st := conntest.StatusOn(conntest.DialFrom(t, "127.0.0.1", addr), time.Now().Add(2*time.Second)); st != http.StatusTooManyRequests {
		t.Fatalf("one more unauthenticated connection: status %d, want 429", st)
	}
	for name, c := range map[string]net.Conn{"GET /v1/self": freed, "meta-data": viaEcho} {
		if st := conntest.Ask(c, "/healthz", ""); st != http.StatusOK {
			t.Errorf("the connection authenticated by %s was not kept alive: status %d", name, st)
		}
	}
}
