package bmc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Chassis is the machine the BMC controls. The lab's simulated machine
// implements it. Its methods may be slow and are called from several
// goroutines; the BMC holds no lock while calling them and answers the
// request once the call returns.
type Chassis interface {
	PowerOn()
	PowerOff()
	PowerCycle()
	HardReset()
	IsPoweredOn() bool
	// SetBootDevice sets the boot override: dev is "pxe", "disk",
	// "cdrom", "bios" or "none".
	SetBootDevice(dev string, persistent, efi bool)
	BootDevice() (dev string, persistent, efi bool)
}

// Options configure a BMC.
type Options struct {
	Addr     string // UDP listen address; "127.0.0.1:0" picks a free port
	Username string // the one user (ID 2, administrator); at most 16 bytes
	Password string // at most 20 bytes (16 for IPMI v1.5 sessions)
	GUID     [16]byte
	// AllowCipherZero enables the unauthenticated modes: RMCP+ cipher
	// suite 0 and IPMI v1.5 authentication type "none". Off by default.
	AllowCipherZero bool
	// Unreachable, when it returns true, makes the BMC silently drop every
	// packet (fault injection).
	Unreachable func() bool
	// Latency is added before each reply (fault injection).
	Latency time.Duration
	// FRU is what the FRU inventory says of the machine (fru print).
	FRU FRU
	// Serial is the machine's serial port, carried by Serial over LAN;
	// nil reports SOL disabled.
	Serial SerialPort
	// Firmware is the firmware revision Get Device ID reports, "major.minor"
	// (major 0-127, minor two decimal digits); "" reports 1.00.
	Firmware string

	sessionTimeout time.Duration // tests only; 0 means defaultSessionTimeout
}

// Stats are the BMC's counters.
type Stats struct {
	Packets        uint64 // datagrams received
	Dropped        uint64 // datagrams dropped (unreachable, malformed, failed auth, busy, retransmission)
	Replies        uint64 // datagrams sent
	SessionsOpened uint64 // sessions that completed activation (v1.5 Activate Session, RAKP 4)
	SessionsClosed uint64 // sessions ended by Close Session or idle timeout
	ActiveSessions int    // active sessions now
	AuthFailures   uint64 // rejected user names, passwords and RAKP check values
	// HandshakesAbandoned counts session handshakes that expired unfinished.
	// A wrong password over lanplus lands here, not in AuthFailures: ipmitool
	// checks the RAKP 2 HMAC, finds it wrong and quits without a RAKP 3.
	HandshakesAbandoned uint64
	Commands            map[string]uint64 // IPMI commands executed, by name
}

// defaultSessionTimeout is how long an idle session lives; a handshake
// (v1.5 challenge, RMCP+ open session and RAKP) must finish within
// handshakeTimeout.
const (
	defaultSessionTimeout = 60 * time.Second
	handshakeTimeout      = 10 * time.Second
)

const (
	maxSessions = 64  // sessions and handshakes in progress per BMC
	maxInFlight = 256 // packets being handled at once; more are dropped
)

// BMC is a simulated baseboard management controller serving IPMI over LAN
// (RMCP, UDP) for one Chassis.
type BMC struct {
	chassis Chassis
	opts    Options
	conn    *net.UDPConn
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	sem     chan struct{}
	closed  sync.Once

	mu             sync.Mutex // guards everything below
	sessions       map[uint32]*session
	lastSweep      time.Time
	boot           bootState
	lastPowerEvent byte // Get Chassis Status byte 2
	restartCause   byte // Get System Restart Cause: 0 unknown, 1 chassis control command (inventory_chassis.go)
	commands       map[string]uint64
	sel            [][]byte // System Event Log records (inventory_sel.go)
	selAdded       uint32   // timestamps of the last addition and erase
	selErased      uint32

	sol     *solLink // the active SOL payload, if any (sol.go)
	fru     []byte   // FRU device 0 (inventory_fru.go)
	started uint32   // when the BMC started (SDR timestamps)

	packets, dropped, replies   atomic.Uint64
	opened, closedSess, authErr atomic.Uint64
	abandoned                   atomic.Uint64
}

// bootState keeps the System Boot Options parameters that are not derived
// from the Chassis.
type bootState struct {
	setInProgress byte
	validClear    byte    // parameter 3
	ack           [2]byte // parameter 4
	flags         [5]byte // last parameter 5 written (device bits from Chassis)
}

// Start listens on o.Addr (UDP) and serves IPMI requests for chassis until
// Close is called or ctx is done.
func Start(ctx context.Context, chassis Chassis, o Options) (*BMC, error) {
	if chassis == nil {
		return nil, errors.New("bmc: nil chassis")
	}
	if len(o.Username) > 16 {
		return nil, errors.New("bmc: user name longer than 16 bytes")
	}
	if len(o.Password) > 20 {
		return nil, errors.New("bmc: password longer than 20 bytes")
	}
	if o.sessionTimeout <= 0 {
		o.sessionTimeout = defaultSessionTimeout
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	ua, err := net.ResolveUDPAddr("udp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("bmc: %w", err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("bmc: %w", err)
	}
	b := &BMC{
		chassis:  chassis,
		opts:     o,
		conn:     conn,
		sem:      make(chan struct{}, maxInFlight),
		sessions: make(map[uint32]*session),
		commands: make(map[string]uint64),
		fru:      fruImage(o.FRU),
		started:  now(),
	}
	b.ctx, b.cancel = context.WithCancel(ctx)
	b.wg.Add(2)
	go b.readLoop()
	go func() {
		defer b.wg.Done()
		<-b.ctx.Done()
		_ = b.conn.Close()
	}()
	return b, nil
}

// Addr is the UDP address the BMC listens on.
func (b *BMC) Addr() *net.UDPAddr {
	return b.conn.LocalAddr().(*net.UDPAddr)
}

// Close stops the BMC and waits for its goroutines. It may be called more
// than once.
func (b *BMC) Close() error {
	b.closed.Do(func() {
		b.mu.Lock()
		b.endSOLLocked()
		b.mu.Unlock()
		b.cancel()
	})
	b.wg.Wait()
	return nil
}

// Stats returns a snapshot of the counters.
func (b *BMC) Stats() Stats {
	b.mu.Lock()
	b.sweepLocked(time.Now(), true)
	s := Stats{
		ActiveSessions: 0,
		Commands:       make(map[string]uint64, len(b.commands)),
	}
	for _, se := range b.sessions {
		if se.state == stateActive {
			s.ActiveSessions++
		}
	}
	for k, v := range b.commands {
		s.Commands[k] = v
	}
	b.mu.Unlock()
	s.Packets = b.packets.Load()
	s.Dropped = b.dropped.Load()
	s.Replies = b.replies.Load()
	s.SessionsOpened = b.opened.Load()
	s.SessionsClosed = b.closedSess.Load()
	s.AuthFailures = b.authErr.Load()
	s.HandshakesAbandoned = b.abandoned.Load()
	return s
}

// String renders the command counters in a stable order (for logs).
func (s Stats) String() string {
	names := make([]string, 0, len(s.Commands))
	for n := range s.Commands {
		names = append(names, n)
	}
	sort.Strings(names)
	out := fmt.Sprintf("packets=%d dropped=%d replies=%d opened=%d closed=%d active=%d authfail=%d abandoned=%d",
		s.Packets, s.Dropped, s.Replies, s.SessionsOpened, s.SessionsClosed, s.ActiveSessions, s.AuthFailures, s.HandshakesAbandoned)
	for _, n := range names {
		out += fmt.Sprintf(" %q=%d", n, s.Commands[n])
	}
	return out
}

func (b *BMC) unreachable() bool {
	return b.opts.Unreachable != nil && b.opts.Unreachable()
}

func (b *BMC) readLoop() {
	defer b.wg.Done()
	buf := make([]byte, 2048)
	for {
		n, addr, err := b.conn.ReadFromUDP(buf)
		if err != nil {
			if b.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		b.packets.Add(1)
		if b.unreachable() {
			b.dropped.Add(1)
			continue
		}
		pkt := append([]byte(nil), buf[:n]...)
		select {
		case b.sem <- struct{}{}:
		default:
			b.dropped.Add(1) // overloaded: drop like a busy BMC
			continue
		}
		if handshake(pkt) {
			// A BMC takes the RMCP+ handshake's messages one at a time,
			// in the order they came: a retransmitted RAKP 1 taken after
			// the one that followed it would leave the BMC with another
			// random number than the one the client answers, and RAKP 3
			// refused as a wrong password. Only the reply's latency runs
			// apart. (Commands in a session stay concurrent: a slow
			// chassis action is not executed again when retransmitted.)
			reply := b.process(pkt, addr)
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				defer func() { <-b.sem }()
				b.send(reply, addr)
			}()
			continue
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer func() { <-b.sem }()
			b.send(b.process(pkt, addr), addr)
		}()
	}
}

// handshake tells the RMCP+ session set-up messages (Open Session, RAKP 1
// and RAKP 3) apart.
func handshake(pkt []byte) bool {
	if len(pkt) < rmcpHeaderLen+2 || pkt[3] != rmcpClassIPMI || pkt[4] != authRMCPPlus {
		return false
	}
	switch pkt[5] & 0x3f {
	case payloadOpenSessReq, payloadRAKP1, payloadRAKP3:
		return true
	}
	return false
}

// send sends reply (nil: the packet is dropped) after the configured latency.
func (b *BMC) send(reply []byte, addr *net.UDPAddr) {
	if reply == nil {
		b.dropped.Add(1)
		return
	}
	if d := b.opts.Latency; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-b.ctx.Done():
			t.Stop()
			return
		}
	}
	if b.unreachable() {
		return
	}
	if _, err := b.conn.WriteToUDP(reply, addr); err == nil {
		b.replies.Add(1)
	}
}

// process returns the reply datagram for pkt, or nil to drop it.
func (b *BMC) process(pkt []byte, addr *net.UDPAddr) []byte {
	if len(pkt) < rmcpHeaderLen+1 || pkt[0] != rmcpVersion {
		return nil
	}
	switch pkt[3] {
	case rmcpClassASF:
		if len(pkt) >= rmcpHeaderLen+asfHeaderLn &&
			binary.BigEndian.Uint32(pkt[4:8]) == asfIANA && pkt[8] == asfPing {
			return asfPongFor(pkt)
		}
		return nil
	case rmcpClassIPMI:
		if pkt[4] == authRMCPPlus {
			return b.processV20(pkt, addr)
		}
		return b.processV15(pkt, addr)
	}
	return nil
}

func (b *BMC) countCommand(netFn, cmd byte) {
	name := commandName(netFn, cmd)
	b.mu.Lock()
	b.commands[name]++
	b.mu.Unlock()
}
