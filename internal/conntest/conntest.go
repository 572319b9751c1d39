// Package conntest holds what the listeners' connection tests share:
// the process's memory as the runtime counts it, raw connections from a
// chosen loopback source, and reading one answer off them. Tests only.
package conntest

import (
	"bufio"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// MemInUse is the process's heap and stack bytes in use after a GC.
func MemInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// HeapLive is the bytes of live heap objects after a collection, and the
// number of goroutines: what connections that went away must give back
// (the heap's spans and the stacks of ended goroutines are the runtime's
// to keep or return).
func HeapLive() (uint64, int) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, runtime.NumGoroutine()
}

// Returned waits up to about 5 s for the heap to come back within slack
// of base and the goroutines to baseG (give or take a few of other
// tests' ending); it returns what is left over base, and how many
// goroutines over baseG.
func Returned(base uint64, baseG int, slack uint64) (uint64, int) {
	var left uint64
	var extra int
	for i := 0; i < 100 && (i == 0 || left >= slack || extra > 4); i++ {
		time.Sleep(50 * time.Millisecond)
		h, g := HeapLive()
		left, extra = max(h, base)-base, g-baseG
	}
	return left, extra
}

// DialFrom connects to addr from the local address src (127.0.0.2 is
// another loopback source on Linux); the connection closes with the test.
func DialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// StatusOn is the status of the answer on c, waiting until deadline (0:
// none came, or the connection ended without one).
func StatusOn(c net.Conn, deadline time.Time) int {
	_ = c.SetReadDeadline(deadline)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Ask sends a GET of path on c, with tok as its bearer token unless
// empty, and returns the answer's status (0: none within 2 s, or the
// connection was closed).
func Ask(c net.Conn, path, tok string) int {
	req := "GET " + path + " HTTP/1.1\r\nHost: slipway\r\n"
	if tok != "" {
		req += "Authorization: Bearer " + tok + "\r\n"
	}
	if _, err := c.Write([]byte(req + "\r\n")); err != nil {
		return 0
	}
	return StatusOn(c, time.Now().Add(2*time.Second))
}
