package ipmi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	goipmi "github.com/vmware/goipmi"
)

// The serial console: Serial over LAN (IPMI v2.0 chapter 15) in an RMCP+
// session of its own, outside the per-BMC lock that serialises power and
// boot calls (a console stays attached for hours; power calls go on
// meanwhile in their own sessions). The BMC's SOL packets are
// acknowledged and written out once each; typed characters are sent one
// packet at a time, retransmitted until acknowledged; Get Device ID every
// solKeepalive keeps the session from timing out while the machine is
// quiet, as ipmitool does.

const (
	payloadSOL = 0x01

	cmdActivatePayload   goipmi.Command = 0x48
	cmdDeactivatePayload goipmi.Command = 0x49

	solInstance      = 1
	solKeepalive     = 15 * time.Second
	solRetry         = 500 * time.Millisecond
	solRetries       = 7
	solPoll          = 100 * time.Millisecond // how long one read waits before the loop looks at input and timers
	solMaxChars      = 200                    // characters per packet sent; BMCs accept at least this much
	solCleanupWithin = 5 * time.Second        // Deactivate Payload and Close Session after the caller detached

	solStatusNack        = 0x40
	solStatusDeactivated = 0x10
)

var _ drivers.OOBConsole = (*Driver)(nil)

// Console attaches to the node's serial console over SOL (lanplus only).
func (d *Driver) Console(ctx context.Context, b drivers.BMC, cio drivers.ConsoleIO) error {
	t, err := newTarget(b)
	if err != nil {
		return err
	}
	if !t.v2 {
		return drivers.Errorf(drivers.Permanent, "ipmi: node %s: Serial over LAN needs an IPMI v2.0 (lanplus) session; the design says lan (IPMI v1.5)", b.Node)
	}
	// The session outlives ctx briefly, so that the payload is deactivated
	// and the session closed when the caller detaches.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	l, err := dial(sctx, t.addr, d.s.policy)
	if err != nil {
		return err
	}
	defer l.close()
	pw := []byte(b.Password.Reveal())
	s, err := openV2(l, t.suite, t.user, pw, t.priv)
	clear(pw)
	if err != nil {
		return err
	}
	defer s.close()
	if err := activateSOL(s); err != nil {
		return err
	}
	if cio.Attached != nil {
		cio.Attached()
	}
	c := &solConsole{s: s, out: cio.Out, in: cio.In}
	err = c.run(ctx)
	stop := time.AfterFunc(solCleanupWithin, cancel)
	defer stop.Stop()
	if !c.deactivated {
		_, _ = s.do(solPayloadRequest(cmdDeactivatePayload, "Deactivate Payload"))
	}
	return err
}

func solPayloadRequest(cmd goipmi.Command, name string) request {
	return request{netFn: goipmi.NetworkFunctionApp, cmd: cmd, name: name,
		data: []byte{payloadSOL, solInstance, 0, 0, 0, 0}}
}

// activateSOL runs Activate Payload for SOL instance 1, asking for
// encryption and authentication as the session's suite has them.
func activateSOL(s *v2Session) error {
	r := solPayloadRequest(cmdActivatePayload, "Activate Payload (SOL)")
	if s.suite.conf != confNone {
		r.data[2] |= 0x80
	}
	if s.suite.integ != integNone {
		r.data[2] |= 0x40
	}
	p, err := s.do(r)
	if err != nil {
		return err
	}
	target := s.l.target
	switch p.cc {
	case goipmi.CommandCompleted:
		return nil
	case 0x80:
		return drivers.NewError(drivers.Transient, fmt.Errorf("BMC %s: %w (SOL payload already active)", target, drivers.ErrConsoleBusy))
	case 0x81:
		return drivers.Errorf(drivers.Permanent, "BMC %s: Serial over LAN is disabled on the BMC: enable it (ipmitool sol set enabled true)", target)
	case 0x82:
		return drivers.NewError(drivers.Transient, fmt.Errorf("BMC %s: %w (SOL activation limit reached)", target, drivers.ErrConsoleBusy))
	}
	return commandError(target, r, p.cc)
}

// solConsole is an activated SOL payload.
type solConsole struct {
	s   *v2Session
	out io.Writer
	in  <-chan []byte

	seq         byte // of the last packet sent (1-15)
	pending     []byte
	sent        time.Time
	tries       int
	lastIn      byte // sequence number of the last BMC packet written out
	lastInLen   int  // and how many of its characters were
	keepalive   time.Time
	deactivated bool
}

// run is the console's loop: read a packet (or time out), then look at
// input, retransmissions and the keepalive.
func (c *solConsole) run(ctx context.Context) error {
	c.keepalive = time.Now()
	in := c.in
	for ctx.Err() == nil {
		if c.pending == nil && in != nil {
			select {
			case p, ok := <-in:
				if !ok {
					in = nil
				} else if len(p) > 0 {
					c.send(p)
				}
			default:
			}
		}
		if err := c.timers(); err != nil {
			return err
		}
		n, err := c.s.l.read(time.Now().Add(solPoll))
		var ne net.Error
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &ne) && ne.Timeout():
			continue
		default:
			return drivers.Errorf(drivers.Transient, "BMC %s: console: %v", c.s.l.target, scrubNetError(err))
		}
		if err := c.receive(c.s.l.buf[:n]); err != nil {
			return err
		}
	}
	return nil
}

// timers retransmits an unacknowledged packet and sends the keepalive.
func (c *solConsole) timers() error {
	now := time.Now()
	if c.pending != nil && now.Sub(c.sent) >= solRetry {
		if c.tries > solRetries {
			return drivers.Errorf(drivers.Transient, "BMC %s: console: the BMC acknowledged none of %d sends of typed characters: it is gone or the console was taken over", c.s.l.target, c.tries)
		}
		c.transmit()
	}
	if now.Sub(c.keepalive) >= solKeepalive {
		c.keepalive = now
		r := request{netFn: goipmi.NetworkFunctionApp, cmd: goipmi.CommandGetDeviceID}
		c.s.rqSeq = (c.s.rqSeq + 1) & 0x3f
		c.s.l.send(c.s.packet(r.message(c.s.rqSeq))) // the reply is read and ignored
	}
	return nil
}

// send starts sending typed characters, solMaxChars a packet.
func (c *solConsole) send(p []byte) {
	c.pending = append([]byte(nil), p...)
	c.next()
}

// next sends the first packet's worth of the pending characters under a
// new sequence number.
func (c *solConsole) next() {
	c.seq = c.seq%15 + 1
	c.tries = 0
	c.transmit()
}

func (c *solConsole) transmit() {
	c.tries++
	c.sent = time.Now()
	chars := c.pending[:min(len(c.pending), solMaxChars)]
	c.s.l.send(c.s.framed(payloadSOL, append([]byte{c.seq, 0, 0, 0}, chars...)))
}

// receive handles one datagram: a SOL packet from the BMC is written out
// (new characters only) and acknowledged, an acknowledgement of ours
// ends the wait for it; anything else (keepalive replies) is ignored.
func (c *solConsole) receive(pkt []byte) error {
	p, ok := c.s.openPayload(pkt, payloadSOL)
	if !ok || len(p) < 4 {
		return nil
	}
	seq, ack, accepted, status, data := p[0]&0x0f, p[1]&0x0f, int(p[2]), p[3], p[4:]
	if ack != 0 && ack == c.seq && c.pending != nil {
		c.acked(accepted, status&solStatusNack != 0)
	}
	if seq != 0 {
		if err := c.write(seq, data); err != nil {
			return err
		}
		c.s.l.send(c.s.framed(payloadSOL, []byte{0, seq, byte(len(data)), 0}))
	}
	if status&solStatusDeactivated != 0 {
		c.deactivated = true
		return drivers.Errorf(drivers.Transient, "BMC %s: the BMC ended the console (SOL deactivating)", c.s.l.target)
	}
	return nil
}

// acked: the BMC took accepted characters of the packet (all of them
// when it says 0 or more); a NACK leaves it for a retransmission.
func (c *solConsole) acked(accepted int, nack bool) {
	if nack {
		return
	}
	n := min(len(c.pending), solMaxChars)
	if accepted > 0 && accepted < n {
		n = accepted
	}
	if c.pending = c.pending[n:]; len(c.pending) == 0 {
		c.pending = nil
		return
	}
	c.next()
}

// write writes the characters of BMC packet seq not written already: a
// retransmission of the last packet may carry more characters than it did.
func (c *solConsole) write(seq byte, data []byte) error {
	if seq == c.lastIn {
		if len(data) <= c.lastInLen {
			return nil
		}
		data, c.lastInLen = data[c.lastInLen:], len(data)
	} else {
		c.lastIn, c.lastInLen = seq, len(data)
	}
	if _, err := c.out.Write(data); err != nil {
		return fmt.Errorf("console output: %w", err)
	}
	return nil
}
