// Package connlimit caps, per source address, the connections a listener
// holds that have not yet authenticated a request. Each one costs the
// server memory (its read buffer, its request's state, a goroutine)
// before anything about the caller is known; a connection whose request
// authenticates stops counting, so a source's authenticated callers (a
// proxy in front of many nodes, the lab's agents on one loopback address)
// are never refused by it. Over the cap a new connection is answered by
// the refusal the listener was given (an HTTP 429 on a plain listener)
// and closed before any of it is read.
//
// A source is an IPv4 address, or an IPv6 /64 (what one host is usually
// given). Addresses that are not IP (a Unix socket) are not counted.
package connlimit

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Limiter counts the unauthenticated connections of each source. It is
// safe for concurrent use.
type Limiter struct {
	max     int
	mu      sync.Mutex
	open    map[netip.Prefix]int
	refused atomic.Uint64
	// Warn, when set, is told of a refusal: the first, then at most one
	// a minute (the source of the one told, the refusals so far).
	Warn   func(source netip.Prefix, refused uint64)
	warned time.Time // under mu
}

// New is a Limiter of at most max unauthenticated connections per source;
// max <= 0: no cap (the connections are still tracked, never refused).
func New(max int) *Limiter {
	return &Limiter{max: max, open: map[netip.Prefix]int{}}
}

// Refused is how many connections were refused so far.
func (l *Limiter) Refused() uint64 { return l.refused.Load() }

// Unauthenticated is how many connections from addr's source are open and
// have not authenticated a request.
func (l *Limiter) Unauthenticated(addr netip.Addr) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[sourceOf(addr)]
}

// take counts one more connection of src, unless that would pass the cap.
func (l *Limiter) take(src netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.open[src] >= l.max {
		return false
	}
	l.open[src]++
	return true
}

func (l *Limiter) release(src netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[src] <= 1 {
		delete(l.open, src)
	} else {
		l.open[src]--
	}
}

// noteRefusal counts a refusal of src and tells Warn, at most once a
// minute.
func (l *Limiter) noteRefusal(src netip.Prefix) {
	n := l.refused.Add(1)
	if l.Warn == nil {
		return
	}
	l.mu.Lock()
	tell := l.warned.IsZero() || time.Since(l.warned) >= time.Minute
	if tell {
		l.warned = time.Now()
	}
	l.mu.Unlock()
	if tell {
		l.Warn(src, n)
	}
}

// sourceOf is addr's source: the address itself, or an IPv6 address's /64.
func sourceOf(addr netip.Addr) netip.Prefix {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p
	}
	return netip.PrefixFrom(addr, 32)
}

// Listen wraps ln: a connection over the cap is passed to refuse (nil:
// none; it is closed either way) and not returned by Accept.
func (l *Limiter) Listen(ln net.Listener, refuse func(net.Conn)) net.Listener {
	return &listener{Listener: ln, l: l, refuse: refuse}
}

type listener struct {
	net.Listener
	l      *Limiter
	refuse func(net.Conn)
}

// Accept returns the next connection within the cap; those over it are
// refused and closed on the way.
func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ap, ok := netip.AddrFromSlice(tcpIP(c.RemoteAddr()))
		if !ok {
			return c, nil // not an IP peer: not counted
		}
		src := sourceOf(ap)
		if ln.l.take(src) {
			lc := &conn{Conn: c, l: ln.l, src: src}
			lc.counted.Store(true)
			return lc, nil
		}
		ln.l.noteRefusal(src)
		if ln.refuse != nil {
			ln.refuse(c)
		}
		_ = c.Close()
	}
}

func tcpIP(a net.Addr) net.IP {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP
	}
	return nil
}

// conn is a counted connection until it authenticates or closes.
type conn struct {
	net.Conn
	l       *Limiter
	src     netip.Prefix
	counted atomic.Bool
}

func (c *conn) uncount() {
	if c.counted.CompareAndSwap(true, false) {
		c.l.release(c.src)
	}
}

func (c *conn) Close() error {
	c.uncount()
	return c.Conn.Close()
}

// Trust marks c (a connection Accept returned, or one wrapping it, such
// as a *tls.Conn) as authenticated: it no longer counts against its
// source. Other connections are left alone.
func Trust(c net.Conn) {
	for range 4 { // a few layers of wrapping at most
		switch x := c.(type) {
		case *conn:
			x.uncount()
			return
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return
		}
	}
}

// ConnKey is the context key a server keeps a request's connection under
// for TrustFrom, as a Held (net/http: Server.ConnContext with WithConn;
// fasthttp: the request's user value of this key, Hold(c.Conn())).
type ConnKey struct{}

// Held is a connection kept for TrustFrom. It is not itself an io.Closer:
// fasthttp closes the user values that are when a request ends, which
// would end a kept-alive connection after each request.
type Held struct{ c net.Conn }

// Hold is c, held for TrustFrom.
func Hold(c net.Conn) Held { return Held{c} }

// WithConn is ctx carrying c for TrustFrom (http.Server.ConnContext).
func WithConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, ConnKey{}, Hold(c))
}

// TrustFrom trusts the connection ctx carries (none: nothing happens).
func TrustFrom(ctx context.Context) {
	if h, ok := ctx.Value(ConnKey{}).(Held); ok {
		Trust(h.c)
	}
}

// Refuse429 is a refusal for a plain HTTP listener: a 429 problem answer
// that closes the connection, written without reading the request (and
// given at most a tenth of a second: the peer's buffer takes it at once).
func Refuse429(max int) func(net.Conn) {
	body := fmt.Sprintf(`{"type":"about:blank","title":"Too Many Requests","status":429,`+
		`"detail":"this address has %d connections open that have not authenticated a request, the most it may: close some, or send them a token, and retry"}`, max)
	msg := []byte(fmt.Sprintf("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/problem+json\r\n"+
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	return func(c net.Conn) {
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.Write(msg)
	}
}
