package bmc

import (
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// Serial over LAN (IPMI v2.0 chapter 15): a console activates the SOL
// payload in its RMCP+ session (Activate Payload); from then on the BMC
// sends what the machine writes to its serial port as SOL packets to the
// console's address, each retransmitted until the console acknowledges
// it, and hands the characters the console sends to the machine,
// acknowledging them. One SOL instance per BMC: a second activation is
// refused with "payload already active" while the first lasts.

// SerialPort is the machine's serial port as the BMC carries it.
type SerialPort interface {
	// Attach returns what the machine writes from now on, and the function
	// that detaches (and closes the channel).
	Attach() (<-chan []byte, func())
	// Type hands the characters a console sent to the machine.
	Type(p []byte)
}

const (
	payloadSOL = 0x01

	cmdActivatePayload      = 0x48 // App
	cmdDeactivatePayload    = 0x49
	cmdGetPayloadActivation = 0x4a

	solInstance      = 1
	solMaxPayload    = 256                    // payload bytes, SOL header included, either way
	solMaxData       = solMaxPayload - 4      // characters per SOL packet
	solRetries       = 7                      // as SOL parameter 4 says
	solRetryInterval = 500 * time.Millisecond // as SOL parameter 4 says
	solStartDelay    = 100 * time.Millisecond // lets the console take the activation reply first

	solStatusNack = 0x40 // operation/status byte: the packet is a NACK
)

// solLink is an active SOL payload: the session that activated it and the
// attached serial port.
type solLink struct {
	s      *session
	out    <-chan []byte
	detach func()
	acks   chan solAck
	stop   chan struct{}
	once   sync.Once
	lastIn byte // sequence number of the last console packet typed (guarded by BMC.mu)
}

type solAck struct {
	seq      byte
	accepted byte
	nack     bool
}

func (l *solLink) end() {
	l.once.Do(func() {
		close(l.stop)
		l.detach()
	})
}

var solCommands = map[[2]byte]struct {
	info cmdInfo
	run  handler
}{
	{netFnApp, cmdActivatePayload}:      {cmdInfo{"Activate Payload", privUser}, (*BMC).activatePayload},
	{netFnApp, cmdDeactivatePayload}:    {cmdInfo{"Deactivate Payload", privUser}, (*BMC).deactivatePayload},
	{netFnApp, cmdGetPayloadActivation}: {cmdInfo{"Get Payload Activation Status", privUser}, (*BMC).payloadActivation},
}

func init() {
	for k, c := range solCommands {
		inventoryCommands[k] = c
		commandTable[k] = c.info
	}
}

// activatePayload answers Activate Payload (section 24.1) for SOL
// instance 1: it attaches the serial port and starts sending its output
// to the session's console.
func (b *BMC) activatePayload(s *session, d []byte) (byte, []byte) {
	if len(d) < 6 {
		return ccReqDataLen, nil
	}
	if d[0] != payloadSOL {
		return ccInvalidData, nil
	}
	if d[1] != solInstance {
		return 0xc9, nil // parameter out of range
	}
	if b.opts.Serial == nil {
		return 0x81, nil // payload type disabled
	}
	b.mu.Lock()
	if b.sol != nil {
		b.mu.Unlock()
		return 0x80, nil // payload already active on another session
	}
	if !s.v2 || s.addr == nil {
		b.mu.Unlock()
		return ccInvalidData, nil // SOL needs an RMCP+ session
	}
	out, detach := b.opts.Serial.Attach()
	l := &solLink{s: s, out: out, detach: detach, acks: make(chan solAck, 8), stop: make(chan struct{})}
	b.sol = l
	b.mu.Unlock()
	b.wg.Add(1)
	go b.solPump(l)
	r := make([]byte, 4, 12) // auxiliary data: nothing to say
	r = binary.LittleEndian.AppendUint16(r, solMaxPayload)
	r = binary.LittleEndian.AppendUint16(r, solMaxPayload)
	r = binary.LittleEndian.AppendUint16(r, uint16(b.Addr().Port))
	return ccOK, append(r, 0xff, 0xff) // no VLAN
}

// deactivatePayload answers Deactivate Payload (section 24.2).
func (b *BMC) deactivatePayload(_ *session, d []byte) (byte, []byte) {
	if len(d) < 6 {
		return ccReqDataLen, nil
	}
	if d[0] != payloadSOL || d[1] != solInstance {
		return ccInvalidData, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sol == nil {
		return 0x80, nil // payload already deactivated
	}
	b.endSOLLocked()
	return ccOK, nil
}

// payloadActivation answers Get Payload Activation Status (section 24.4):
// one SOL instance, active or not.
func (b *BMC) payloadActivation(_ *session, d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccReqDataLen, nil
	}
	if d[0] != payloadSOL {
		return ccInvalidData, nil
	}
	b.mu.Lock()
	active := b.sol != nil
	b.mu.Unlock()
	if active {
		return ccOK, []byte{0x01, 0x01, 0x00}
	}
	return ccOK, []byte{0x01, 0x00, 0x00}
}

// endSOLLocked deactivates the SOL payload (b.mu held).
func (b *BMC) endSOLLocked() {
	if b.sol != nil {
		b.sol.end()
		b.sol = nil
	}
}

// solPump sends what the serial port writes to the console, one packet at
// a time, each until acknowledged or out of retries.
func (b *BMC) solPump(l *solLink) {
	defer b.wg.Done()
	if !b.solWait(l, solStartDelay) {
		return
	}
	var seq byte
	for {
		var data []byte
		select {
		case <-l.stop:
			return
		case <-b.ctx.Done():
			return
		case c, ok := <-l.out:
			if !ok {
				return
			}
			data = gather(l.out, c)
		}
		for len(data) > 0 {
			seq = seq%15 + 1
			n, ok := b.solSend(l, seq, data)
			if !ok {
				break // the console is gone or deaf: these characters are lost
			}
			data = data[n:]
		}
	}
}

// gather appends to first what else the port has written already, up to
// one packet's worth.
func gather(out <-chan []byte, first []byte) []byte {
	data := first
	for len(data) < solMaxData {
		select {
		case c, ok := <-out:
			if !ok {
				return data
			}
			data = append(data, c...)
		default:
			return data
		}
	}
	return data
}

// solSend sends up to solMaxData characters of data as packet seq and
// waits for the console's acknowledgement, retransmitting on silence; it
// returns how many characters the console accepted.
func (b *BMC) solSend(l *solLink, seq byte, data []byte) (int, bool) {
	data = data[:min(len(data), solMaxData)]
	payload := append([]byte{seq, 0, 0, 0}, data...)
	for range solRetries + 1 {
		b.solTransmit(l, payload)
		t := time.NewTimer(solRetryInterval)
		for waiting := true; waiting; {
			select {
			case a := <-l.acks:
				if a.seq != seq {
					continue
				}
				t.Stop()
				if a.nack || a.accepted == 0 || int(a.accepted) > len(data) {
					return len(data), true
				}
				return int(a.accepted), true
			case <-t.C:
				waiting = false
			case <-l.stop:
				t.Stop()
				return 0, false
			case <-b.ctx.Done():
				t.Stop()
				return 0, false
			}
		}
	}
	return 0, false
}

// solTransmit frames a SOL payload in the activating session, with its
// next sequence number and its cipher suite, and sends it to the console.
func (b *BMC) solTransmit(l *solLink, payload []byte) {
	b.mu.Lock()
	s := l.s
	seq := s.outSeq
	s.outSeq++
	cs, rid, addr := s.cs, s.remoteID, s.addr
	b.mu.Unlock()
	if b.unreachable() {
		return
	}
	if _, err := b.conn.WriteToUDP(buildV20(payloadSOL, rid, seq, payload, &cs), addr); err == nil {
		b.replies.Add(1)
	}
}

// solWait sleeps d unless the SOL payload ends first.
func (b *BMC) solWait(l *solLink, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.stop:
	case <-b.ctx.Done():
	}
	return false
}

// solInbound handles a SOL packet from the console of session s: an
// acknowledgement of the BMC's packet goes to the pump; characters go to
// the machine and are acknowledged (a retransmission is acknowledged
// again, not typed twice).
func (b *BMC) solInbound(s *session, inSeq uint32, p []byte, now time.Time) []byte {
	if len(p) < 4 {
		return nil
	}
	b.mu.Lock()
	l := b.sol
	if l == nil || l.s != s || !s.acceptSeqLocked(inSeq) {
		b.mu.Unlock()
		return nil
	}
	s.lastUsed = now
	seq, ack, accepted, status, data := p[0]&0x0f, p[1]&0x0f, p[2], p[3], p[4:]
	fresh := seq != 0 && seq != l.lastIn
	if fresh {
		l.lastIn = seq
	}
	b.mu.Unlock()
	if ack != 0 {
		select {
		case l.acks <- solAck{seq: ack, accepted: accepted, nack: status&solStatusNack != 0}:
		default:
		}
	}
	if seq == 0 {
		return nil // an acknowledgement only
	}
	if fresh && len(data) > 0 {
		b.opts.Serial.Type(data)
	}
	b.mu.Lock()
	out := s.outSeq
	s.outSeq++
	cs := s.cs
	b.mu.Unlock()
	return buildV20(payloadSOL, s.remoteID, out, []byte{0, seq, byte(len(data)), 0}, &cs)
}

// remember records the console's address of an authentic session packet:
// SOL output goes there.
func (s *session) remember(addr *net.UDPAddr) {
	if addr != nil {
		s.addr = addr
	}
}
