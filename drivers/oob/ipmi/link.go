package ipmi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/slipway-dev/slipway/internal/backoff"

	"github.com/slipway-dev/slipway/drivers"
)

// policy is how long to wait for a reply and how often to ask again.
type policy struct {
	timeout time.Duration // wait for one reply before retransmitting
	retries int           // retransmissions after the first send
	backoff time.Duration // pause before the first retransmission; doubles
}

// pause returns the pause before retransmission n (1, 2, ...): backoff,
// doubling each time, never more than the reply timeout.
func (p policy) pause(n int) time.Duration {
	d := p.backoff
	for i := 1; i < n && d < p.timeout; i++ {
		d *= 2
	}
	return min(d, p.timeout)
}

// link is the UDP socket of one session: it sends a request, waits for the
// reply and retransmits on silence, and it gives up as soon as the caller's
// context is done.
type link struct {
	ctx    context.Context
	conn   *net.UDPConn
	target string // host:port, for messages
	policy policy
	buf    []byte

	mu   sync.Mutex
	done bool // ctx is done: no new read deadline may be set
	stop func() bool
}

// dial opens the socket. A name is resolved with ctx.
func dial(ctx context.Context, target string, p policy) (*link, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", target)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, target, "resolving the address")
		}
		return nil, drivers.Errorf(drivers.Transient, "BMC %s: %v", target, scrubNetError(err))
	}
	l := &link{ctx: ctx, conn: c.(*net.UDPConn), target: target, policy: p, buf: make([]byte, 2048)}
	l.stop = context.AfterFunc(ctx, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.done = true
		_ = l.conn.SetReadDeadline(time.Unix(1, 0)) // wake a blocked read now
	})
	return l, nil
}

func (l *link) close() {
	l.stop()
	_ = l.conn.Close()
}

// send writes one datagram without waiting for an answer (Close Session
// after the caller gave up, RAKP 3 reporting a failed check).
func (l *link) send(pkt []byte) { _, _ = l.conn.Write(pkt) }

// ctxError classifies the context's error: Transient for a deadline,
// Permanent for a cancellation (the caller gave up), as drivers.Classify.
func ctxError(ctx context.Context, target, what string) error {
	err := ctx.Err()
	return drivers.NewError(drivers.Classify(err), fmt.Errorf("BMC %s: %s: %w", target, what, err))
}

// noReplyError: the BMC sent nothing acceptable to any of the attempts.
type noReplyError struct {
	target, what string
	attempts     int
	timeout      time.Duration
	refused      bool   // the host answered "port unreachable"
	hint         string // what else may be wrong
}

func (e *noReplyError) Error() string {
	var s string
	if e.refused {
		s = fmt.Sprintf("BMC %s did not answer %s (%d attempts): port unreachable, nothing listens there", e.target, e.what, e.attempts)
	} else {
		s = fmt.Sprintf("BMC %s did not answer %s (%d attempts, %v each): unreachable, or not an IPMI BMC", e.target, e.what, e.attempts, e.timeout)
	}
	if e.hint != "" {
		s += "; " + e.hint
	}
	return s
}

// exchange sends the datagram build returns and waits up to the policy's
// timeout for a datagram that accept takes; on silence it pauses (backoff)
// and sends again, calling build again (a new session sequence number), up
// to policy.retries times. accept returns whether the datagram is the
// awaited reply and, if so, what is wrong with it; datagrams it does not
// take (stale, forged, for another request) are ignored. The error is a
// classified one: *noReplyError (Transient) after the last attempt, or the
// context's.
func (l *link) exchange(what string, build func(attempt int) []byte, accept func(pkt []byte) (bool, error)) error {
	refused := false
	attempts := l.policy.retries + 1
	for attempt := range attempts {
		if attempt > 0 {
			if err := l.sleep(l.policy.pause(attempt)); err != nil {
				return ctxError(l.ctx, l.target, what)
			}
		}
		if l.ctx.Err() != nil {
			return ctxError(l.ctx, l.target, what)
		}
		if _, err := l.conn.Write(build(attempt)); err != nil {
			if l.ctx.Err() != nil {
				return ctxError(l.ctx, l.target, what)
			}
			if isRefused(err) {
				refused = true
				continue
			}
			return drivers.Errorf(drivers.Transient, "BMC %s: sending %s: %v", l.target, what, scrubNetError(err))
		}
		deadline := time.Now().Add(l.policy.timeout)
		for {
			n, err := l.read(deadline)
			if err != nil {
				if l.ctx.Err() != nil {
					return ctxError(l.ctx, l.target, what)
				}
				if isRefused(err) {
					refused = true
					break
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break
				}
				return drivers.Errorf(drivers.Transient, "BMC %s: waiting for %s: %v", l.target, what, scrubNetError(err))
			}
			if ok, err := accept(l.buf[:n]); ok {
				return err
			}
		}
	}
	return drivers.NewError(drivers.Transient, &noReplyError{target: l.target, what: what, attempts: attempts, timeout: l.policy.timeout, refused: refused})
}

func (l *link) read(deadline time.Time) (int, error) {
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		return 0, l.ctx.Err()
	}
	_ = l.conn.SetReadDeadline(deadline)
	l.mu.Unlock()
	return l.conn.Read(l.buf)
}

// sleep waits d or until the context is done.
func (l *link) sleep(d time.Duration) error {
	return backoff.Sleep(l.ctx, d)
}

// isRefused reports an ICMP port unreachable surfacing on the connected
// socket.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// scrubNetError keeps the cause of a socket error and drops the wrapping
// that repeats local addresses.
func scrubNetError(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}
