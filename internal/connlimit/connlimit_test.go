package connlimit

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// TestSources: an IPv4 address is a source of its own, an IPv6 address
// counts with its /64, and a mapped IPv4 address as the IPv4 one.
func TestSources(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9"},
		{"::ffff:192.0.2.1", "192.0.2.1"},
	} {
		if sourceOf(netip.MustParseAddr(c.a)) != sourceOf(netip.MustParseAddr(c.b)) {
			t.Errorf("%s and %s are different sources", c.a, c.b)
		}
	}
	for _, c := range []struct{ a, b string }{{"2001:db8:1:2::1", "2001:db8:1:3::1"}, {"192.0.2.1", "192.0.2.2"}} {
		if sourceOf(netip.MustParseAddr(c.a)) == sourceOf(netip.MustParseAddr(c.b)) {
			t.Errorf("%s and %s are one source", c.a, c.b)
		}
	}
}

// wrapped is a connection wrapping another, as *tls.Conn does.
type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }

// TestListener: over the cap a connection gets the refusal and is
// closed, Warn told of the first refusal only (within a minute); Trust (also through a wrapper) and Close free a place; the
// counts are the limiter's own.
func TestListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(2)
	warned := make(chan string, 4)
	l.Warn = func(src netip.Prefix, refused uint64) { warned <- fmt.Sprint(src, " ", refused) }
	ln := l.Listen(inner, Refuse429(2))
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", inner.Addr().String(), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	next := func() net.Conn {
		select {
		case c := <-accepted:
			return c
		case <-time.After(2 * time.Second):
			t.Fatal("no connection accepted within 2 s")
			return nil
		}
	}
	dial()
	dial()
	a, b := next(), next()
	lo := netip.MustParseAddr("127.0.0.1")
	if n := l.Unauthenticated(lo); n != 2 {
		t.Fatalf("%d unauthenticated, want 2", n)
	}
	refused := dial()
	_ = refused.SetReadDeadline(time.Now().Add(2 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(refused), nil)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests || !resp.Close || l.Refused() != 1 {
		t.Fatalf("the third connection: %v %v, %d refused", resp, err, l.Refused())
	}
	second := dial() // refused too, and not warned of again within the minute
	_ = second.SetReadDeadline(time.Now().Add(2 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(second), nil); err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the fourth connection: %v %v", resp, err)
	}
	if n := len(warned); n != 1 || <-warned != "127.0.0.1/32 1" || l.Refused() != 2 {
		t.Errorf("warned %d times, %d refused: want once (of the first), 2", n, l.Refused())
	}
	Trust(wrapped{a})
	Trust(wrapped{a}) // once only
	if n := l.Unauthenticated(lo); n != 1 {
		t.Fatalf("after Trust: %d unauthenticated, want 1", n)
	}
	dial()
	c := next()
	b.Close()
	c.Close()
	a.Close()
	if n := l.Unauthenticated(lo); n != 0 {
		t.Fatalf("after Close: %d unauthenticated, want 0", n)
	}
}
