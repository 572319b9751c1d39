package bmc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

// v15Client is a minimal IPMI v1.5 LAN client built on the package's own
// framing helpers, for the cases ipmitool and goipmi cannot reach (MD2,
// bad auth codes, retransmissions, short timeouts).
type v15Client struct {
	conn     *net.UDPConn
	authType byte
	user     string
	pass     string
	sid      uint32
	seq      uint32
	rqSeq    byte
	active   bool
	timeout  time.Duration
	initOut  uint32 // initial outbound sequence number Activate Session asks for (0 means 1)
	lastSeq  uint32 // session sequence number of the last reply
}

var errTimeout = errors.New("no reply")

func dialV15(t testing.TB, b *BMC, authType byte, user, pass string) *v15Client {
	t.Helper()
	conn, err := net.DialUDP("udp", nil, b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &v15Client{conn: conn, authType: authType, user: user, pass: pass, timeout: time.Second}
}

func (c *v15Client) request(netFn, cmd byte, data []byte) []byte {
	c.rqSeq = (c.rqSeq + 1) & 0x3f
	m := []byte{bmcSlaveAddr, netFn << 2}
	m = append(m, ipmiChecksum(m))
	m = append(m, 0x81, c.rqSeq<<2, cmd)
	m = append(m, data...)
	return append(m, ipmiChecksum(m[3:]))
}

func (c *v15Client) packet(msg []byte) []byte {
	at, seq := byte(authNone), uint32(0)
	if c.sid != 0 {
		at = c.authType
	}
	if c.active {
		c.seq++
		seq = c.seq
	}
	return buildV15(at, pad16(c.pass), c.sid, seq, msg)
}

// exchange sends pkt and returns the completion code and data of the reply.
func (c *v15Client) exchange(pkt []byte) (byte, []byte, error) {
	if _, err := c.conn.Write(pkt); err != nil {
		return 0, nil, err
	}
	buf := make([]byte, 1024)
	_ = c.conn.SetReadDeadline(time.Now().Add(c.timeout))
	n, err := c.conn.Read(buf)
	if err != nil {
		return 0, nil, errTimeout
	}
	p, err := parseV15(buf[:n])
	if err != nil {
		return 0, nil, err
	}
	if !v15AuthOK(p, pad16(c.pass)) {
		return 0, nil, errors.New("reply auth code mismatch")
	}
	c.lastSeq = p.seq
	r, err := parseIPMIRequest(p.msg) // same layout: cc is data[0]
	if err != nil || len(r.data) < 1 {
		return 0, nil, errors.New("bad reply message")
	}
	return r.data[0], r.data[1:], nil
}

func (c *v15Client) call(netFn, cmd byte, data ...byte) (byte, []byte, error) {
	return c.exchange(c.packet(c.request(netFn, cmd, data)))
}

// openUntilActivate runs Get Channel Authentication Capabilities, Get
// Session Challenge and Activate Session.
func (c *v15Client) openUntilActivate() error {
	cc, d, err := c.call(netFnApp, cmdGetChanAuthCaps, 0x0e, privAdmin)
	if err != nil || cc != 0 {
		return errors.Join(err, errors.New("auth caps failed"))
	}
	if d[1]&(1<<c.authType) == 0 {
		return errors.New("auth type not offered")
	}
	name := make([]byte, 16)
	copy(name, c.user)
	cc, d, err = c.call(netFnApp, cmdGetSessionChallenge, append([]byte{c.authType}, name...)...)
	if err != nil {
		return err
	}
	if cc != 0 {
		return ccError(cc)
	}
	c.sid = binary.LittleEndian.Uint32(d[:4])
	act := append([]byte{c.authType, privAdmin}, d[4:20]...)
	act = binary.LittleEndian.AppendUint32(act, max(c.initOut, 1))
	cc, d, err = c.call(netFnApp, cmdActivateSession, act...)
	if err != nil {
		return err
	}
	if cc != 0 {
		return ccError(cc)
	}
	c.sid = binary.LittleEndian.Uint32(d[1:5])
	c.seq = binary.LittleEndian.Uint32(d[5:9]) - 1
	c.active = true
	return nil
}

// open runs openUntilActivate and Set Session Privilege Level (admin).
func (c *v15Client) open() error {
	if err := c.openUntilActivate(); err != nil {
		return err
	}
	cc, _, err := c.call(netFnApp, cmdSetSessionPriv, privAdmin)
	if err == nil && cc != 0 {
		err = ccError(cc)
	}
	return err
}

type ccError byte

func (e ccError) Error() string { return fmt.Sprintf("completion code %#02x", byte(e)) }

// TestV15ActivateSessionSequence: the Activate Session reply carries the
// initial outbound session sequence number the console asked for (IPMI
// v2.0 section 22.17; ipmi_sim does the same), and the replies after it
// count on from there. FreeIPMI's v1.5 tools check it and time out on 0.
func TestV15ActivateSessionSequence(t *testing.T) {
	b, _ := startBMC(t, nil)
	c := dialV15(t, b, authMD5, "admin", "secret")
	c.initOut = 0x01020304
	if err := c.open(); err != nil {
		t.Fatal(err)
	}
	// open's last exchange is Set Session Privilege, the first reply after
	// Activate Session.
	if c.lastSeq != 0x01020305 {
		t.Fatalf("the reply after Activate Session carries sequence %#x, want %#x", c.lastSeq, 0x01020305)
	}
	c2 := dialV15(t, b, authMD5, "admin", "secret")
	c2.initOut = 0x77
	if err := c2.openUntilActivate(); err != nil {
		t.Fatal(err)
	}
	if c2.lastSeq != 0x77 {
		t.Fatalf("Activate Session's reply carries sequence %#x, want the initial outbound number 0x77", c2.lastSeq)
	}
}

func TestV15AuthTypes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		authType byte
	}{{"MD2", authMD2}, {"MD5", authMD5}, {"straight", authPassword}} {
		t.Run(tc.name, func(t *testing.T) {
			b, ch := startBMC(t, nil)
			c := dialV15(t, b, tc.authType, "admin", "secret")
			if err := c.open(); err != nil {
				t.Fatal(err)
			}
			if cc, _, err := c.call(netFnChassis, cmdChassisControl, 0x01); err != nil || cc != 0 {
				t.Fatalf("chassis control: cc=%#x err=%v", cc, err)
			}
			if !ch.IsPoweredOn() {
				t.Fatal("chassis not powered on")
			}
			cc, d, err := c.call(netFnChassis, cmdGetChassisStatus)
			if err != nil || cc != 0 || d[0]&1 != 1 {
				t.Fatalf("chassis status: cc=%#x d=%x err=%v", cc, d, err)
			}
			if cc, _, err := c.call(netFnApp, cmdCloseSession, le32(c.sid)...); err != nil || cc != 0 {
				t.Fatalf("close: cc=%#x err=%v", cc, err)
			}
			if s := b.Stats(); s.ActiveSessions != 0 || s.SessionsOpened != 1 || s.SessionsClosed != 1 {
				t.Fatalf("stats: %v", s)
			}
		})
	}
}

func TestV15Rejections(t *testing.T) {
	b, _ := startBMC(t, nil)

	// Wrong password: Activate Session's auth code does not match and the
	// BMC drops it (no reply), like ipmi_sim.
	c := dialV15(t, b, authMD5, "admin", "wrong")
	c.timeout = 300 * time.Millisecond
	if err := c.open(); !errors.Is(err, errTimeout) {
		t.Fatalf("wrong password: %v, want no reply", err)
	}
	// Wrong user: Get Session Challenge answers 0x81 (invalid user name).
	c = dialV15(t, b, authMD5, "nobody", "secret")
	if err := c.open(); err != ccError(0x81) {
		t.Fatalf("wrong user: %v, want completion code 81", err)
	}
	// Authentication type none is not offered by default.
	c = dialV15(t, b, authNone, "admin", "secret")
	if err := c.open(); err == nil {
		t.Fatal("auth type none accepted")
	}
	if s := b.Stats(); s.AuthFailures != 2 || s.SessionsOpened != 0 {
		t.Fatalf("stats: %v", s)
	}

	// A session needs Set Session Privilege Level before operator commands.
	c = dialV15(t, b, authMD5, "admin", "secret")
	if err := c.open(); err != nil {
		t.Fatal(err)
	}
	if cc, _, _ := c.call(netFnApp, cmdSetSessionPriv, privUser); cc != 0 {
		t.Fatalf("lower privilege: %#x", cc)
	}
	if cc, _, _ := c.call(netFnChassis, cmdChassisControl, 0x01); cc != ccInsufficientPrv {
		t.Fatalf("chassis control at user level: cc=%#x, want d4", cc)
	}
	if cc, _, _ := c.call(netFnApp, 0x99); cc != ccInvalidCommand {
		t.Fatalf("unknown command: cc=%#x, want c1", cc)
	}
	// A sequence number far outside the window is dropped; one inside it
	// (even a replayed one) is accepted.
	c.timeout = 200 * time.Millisecond
	c.seq += 1000
	if _, _, err := c.call(netFnApp, cmdGetDeviceID); !errors.Is(err, errTimeout) {
		t.Fatalf("sequence number out of window: %v, want no reply", err)
	}
	c.seq -= 1000 + 5
	if cc, _, err := c.call(netFnApp, cmdGetDeviceID); err != nil || cc != 0 {
		t.Fatalf("sequence number in window: cc=%#x err=%v", cc, err)
	}
	// A packet with a bad auth code inside the session is dropped.
	c.timeout = 200 * time.Millisecond
	c.pass = "wrong"
	if _, _, err := c.call(netFnApp, cmdGetDeviceID); !errors.Is(err, errTimeout) {
		t.Fatalf("bad auth code: %v, want no reply", err)
	}
}

func TestV15AuthNoneWhenAllowed(t *testing.T) {
	b, _ := startBMC(t, func(o *Options) { o.AllowCipherZero = true })
	c := dialV15(t, b, authNone, "admin", "anything")
	if err := c.open(); err != nil {
		t.Fatal(err)
	}
	if cc, _, err := c.call(netFnApp, cmdGetDeviceID); err != nil || cc != 0 {
		t.Fatalf("get device id: cc=%#x err=%v", cc, err)
	}
}

func TestSessionTimeout(t *testing.T) {
	b, _ := startBMC(t, func(o *Options) { o.sessionTimeout = 300 * time.Millisecond })
	c := dialV15(t, b, authMD5, "admin", "secret")
	c.timeout = 200 * time.Millisecond
	if err := c.open(); err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.ActiveSessions != 1 {
		t.Fatalf("active sessions: %d", s.ActiveSessions)
	}
	// A handshake left after Get Session Challenge expires too.
	half := dialV15(t, b, authMD5, "admin", "secret")
	name := make([]byte, 16)
	copy(name, "admin")
	if cc, _, err := half.call(netFnApp, cmdGetSessionChallenge, append([]byte{authMD5}, name...)...); err != nil || cc != 0 {
		t.Fatalf("challenge: cc=%#x err=%v", cc, err)
	}
	time.Sleep(500 * time.Millisecond)
	if s := b.Stats(); s.ActiveSessions != 0 || s.SessionsClosed != 1 || s.HandshakesAbandoned != 1 {
		t.Fatalf("after timeout: %v", s)
	}
	if _, _, err := c.call(netFnApp, cmdGetDeviceID); !errors.Is(err, errTimeout) {
		t.Fatalf("expired session answered: %v", err)
	}
}

// TestRetransmissionWhileBusy: a request retransmitted while the (slow)
// Chassis is still executing it is not executed twice.
func TestRetransmissionWhileBusy(t *testing.T) {
	b, ch := startBMC(t, nil)
	ch.setDelay(300 * time.Millisecond)
	c := dialV15(t, b, authMD5, "admin", "secret")
	if err := c.open(); err != nil {
		t.Fatal(err)
	}
	pkt := c.packet(c.request(netFnChassis, cmdChassisControl, []byte{0x02}))
	for i := 0; i < 3; i++ {
		if _, err := c.conn.Write(pkt); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	replies := 0
	buf := make([]byte, 512)
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(600 * time.Millisecond))
		if _, err := c.conn.Read(buf); err != nil {
			break
		}
		replies++
	}
	if replies != 1 {
		t.Errorf("%d replies, want 1", replies)
	}
	ch.mu.Lock()
	cycles := ch.cycles
	ch.mu.Unlock()
	if cycles != 1 {
		t.Fatalf("power cycle executed %d times", cycles)
	}
}

func TestASFPing(t *testing.T) {
	b, _ := startBMC(t, nil)
	conn, err := net.DialUDP("udp", nil, b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ping := []byte{0x06, 0, 0xff, 0x06, 0, 0, 0x11, 0xbe, 0x80, 0x2a, 0, 0}
	if _, err := conn.Write(ping); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x06, 0, 0xff, 0x06, 0, 0, 0x11, 0xbe, 0x40, 0x2a, 0, 0x10, 0, 0, 0x11, 0xbe, 0, 0, 0, 0, 0x81, 0}
	if !bytes.Equal(buf[:len(want)], want) || n != len(want)+6 {
		t.Fatalf("pong % x", buf[:n])
	}
}

// v20Call sends an unauthenticated RMCP+ payload and returns the reply's
// payload type and payload.
func v20Call(t *testing.T, conn *net.UDPConn, pt byte, payload []byte) (byte, []byte) {
	t.Helper()
	if _, err := conn.Write(buildV20(pt, 0, 0, payload, nil)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1024)
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("payload %#x: %v", pt, err)
	}
	p, err := parseV20(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	return p.payloadType, p.payload
}

func openSessionReq(rsid uint32, auth, integ, conf byte) []byte {
	r := []byte{7, privAdmin, 0, 0}
	r = append(r, le32(rsid)...)
	r = append(r, 0x00, 0, 0, 8, auth, 0, 0, 0)
	r = append(r, 0x01, 0, 0, 8, integ, 0, 0, 0)
	return append(r, 0x02, 0, 0, 8, conf, 0, 0, 0)
}

func rakp1Req(bmcSID uint32, rm []byte, user string) []byte {
	r := append([]byte{7, 0, 0, 0}, le32(bmcSID)...)
	r = append(r, rm...)
	r = append(r, 0x10|privAdmin, 0, 0, byte(len(user)))
	return append(r, user...)
}

func TestRMCPPlusHandshake(t *testing.T) {
	b, ch := startBMC(t, nil)
	conn, err := net.DialUDP("udp", nil, b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const rsid = 0x11223344

	// Algorithms outside the offered suites.
	for _, tc := range []struct{ auth, integ, conf, status byte }{
		{rakpNone, integNone, confNone, rmcpNoCipherSuiteMatch}, // suite 0, not enabled
		{rakpHMACSHA1, integHMACSHA1_96, 0x02, rmcpInvalidConfAlg},
		{0x07, integNone, confNone, rmcpInvalidAuthAlg},
		{rakpHMACSHA1, integHMACSHA256128, confNone, rmcpNoCipherSuiteMatch},
	} {
		pt, r := v20Call(t, conn, payloadOpenSessReq, openSessionReq(rsid, tc.auth, tc.integ, tc.conf))
		if pt != payloadOpenSessRsp || r[1] != tc.status {
			t.Errorf("open session %d/%d/%d: type %#x status %#x, want %#x", tc.auth, tc.integ, tc.conf, pt, r[1], tc.status)
		}
	}

	open := func() uint32 {
		_, r := v20Call(t, conn, payloadOpenSessReq, openSessionReq(rsid, rakpHMACSHA1, integHMACSHA1_96, confAESCBC128))
		if r[1] != rmcpOK || binary.LittleEndian.Uint32(r[4:8]) != rsid {
			t.Fatalf("open session: % x", r)
		}
		return binary.LittleEndian.Uint32(r[8:12])
	}
	rm := bytes.Repeat([]byte{0x5a}, 16)

	// Unknown user: RAKP 2 says "unauthorized name".
	sid := open()
	if _, r := v20Call(t, conn, payloadRAKP1, rakp1Req(sid, rm, "nobody")); r[1] != rmcpUnauthorizedName {
		t.Fatalf("RAKP 2 for unknown user: % x", r)
	}

	// Wrong RAKP 3 HMAC (a console with another password): RAKP 4 says
	// "invalid integrity check value".
	sid = open()
	_, r2 := v20Call(t, conn, payloadRAKP1, rakp1Req(sid, rm, "admin"))
	if r2[1] != rmcpOK {
		t.Fatalf("RAKP 2: % x", r2)
	}
	role := []byte{0x10 | privAdmin, 5}
	kuid := func(pw string) []byte { k := make([]byte, 20); copy(k, pw); return k }
	rc := r2[8:24]
	bad := rakpHMAC(rakpHMACSHA1, kuid("wrong"), rc, le32(rsid), role, []byte("admin"))
	if _, r := v20Call(t, conn, payloadRAKP3, append(append([]byte{7, 0, 0, 0}, le32(sid)...), bad...)); r[1] != rmcpInvalidIntegrityVal {
		t.Fatalf("RAKP 4 for a wrong password: % x", r)
	}

	// The real thing: check RAKP 2, send RAKP 3, check RAKP 4, then run an
	// encrypted and authenticated command.
	sid = open()
	_, r2 = v20Call(t, conn, payloadRAKP1, rakp1Req(sid, rm, "admin"))
	rc = r2[8:24]
	wantRAKP2 := rakpHMAC(rakpHMACSHA1, kuid("secret"), le32(rsid), le32(sid), rm, rc, testGUID[:], role, []byte("admin"))
	if !bytes.Equal(r2[24:40], testGUID[:]) || !bytes.Equal(r2[40:], wantRAKP2) {
		t.Fatalf("RAKP 2 GUID/HMAC mismatch: % x", r2)
	}
	good := rakpHMAC(rakpHMACSHA1, kuid("secret"), rc, le32(rsid), role, []byte("admin"))
	_, r4 := v20Call(t, conn, payloadRAKP3, append(append([]byte{7, 0, 0, 0}, le32(sid)...), good...))
	sik := rakpHMAC(rakpHMACSHA1, kuid("secret"), rm, rc, role, []byte("admin"))
	if r4[1] != rmcpOK || !bytes.Equal(r4[8:], rakpHMAC(rakpHMACSHA1, sik, rm, le32(sid), testGUID[:])[:12]) {
		t.Fatalf("RAKP 4: % x", r4)
	}
	cs := &cipherState{auth: rakpHMACSHA1, integ: integHMACSHA1_96, conf: confAESCBC128}
	cs.deriveKeys(sik)
	c := &v15Client{}
	call := func(seq uint32, tamper bool, netFn, cmd byte, data ...byte) ([]byte, error) {
		pkt := buildV20(payloadIPMI, sid, seq, c.request(netFn, cmd, data), cs)
		if tamper {
			pkt[len(pkt)-20] ^= 1
		}
		if _, err := conn.Write(pkt); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1024)
		_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := conn.Read(buf)
		if err != nil {
			return nil, errTimeout
		}
		p, err := parseV20(buf[:n])
		if err != nil || p.sid != rsid || !p.encrypted || !p.authenticated || !cs.checkTrailer(p) {
			t.Fatalf("reply framing: %v % x", err, buf[:n])
		}
		msg, ok := cs.decrypt(p.payload)
		if !ok {
			t.Fatal("reply does not decrypt")
		}
		r, err := parseIPMIRequest(msg)
		if err != nil {
			t.Fatal(err)
		}
		return r.data, nil
	}
	if d, err := call(1, false, netFnApp, cmdSetSessionPriv, privAdmin); err != nil || d[0] != 0 || d[1] != privAdmin {
		t.Fatalf("set privilege: % x %v", d, err)
	}
	if _, err := call(2, true, netFnChassis, cmdChassisControl, 1); !errors.Is(err, errTimeout) {
		t.Fatalf("tampered packet answered: %v", err)
	}
	if ch.IsPoweredOn() {
		t.Fatal("tampered packet executed")
	}
	if d, err := call(3, false, netFnChassis, cmdChassisControl, 1); err != nil || d[0] != 0 || !ch.IsPoweredOn() {
		t.Fatalf("chassis control: % x %v", d, err)
	}
	if s := b.Stats(); s.AuthFailures != 2 || s.SessionsOpened != 1 || s.ActiveSessions != 1 {
		t.Fatalf("stats: %v", s)
	}
}

// TestGetSessionInfo: Get Session Info by index (0 the asking session,
// N the Nth active one), by handle and by session ID; a session that does
// not exist is "invalid data".
func TestGetSessionInfo(t *testing.T) {
	b, _ := startBMC(t, nil)
	a, c := dialV15(t, b, authMD5, "admin", "secret"), dialV15(t, b, authMD5, "admin", "secret")
	for _, x := range []*v15Client{a, c} {
		if err := x.open(); err != nil {
			t.Fatal(err)
		}
	}
	cc, own, err := c.call(netFnApp, cmdGetSessionInfo, 0x00)
	if err != nil || cc != ccOK || len(own) != 18 || own[2] != 2 || own[3] != 2 || own[4] != privAdmin || own[5] != lanChannel {
		t.Fatalf("current session: cc %#x %x %v", cc, own, err)
	}
	sid := le32(c.sid)
	for _, req := range [][]byte{{0x02}, {0xfe, own[0]}, append([]byte{0xff}, sid...)} {
		cc, d, err := a.call(netFnApp, cmdGetSessionInfo, req...)
		if err != nil || cc != ccOK || len(d) < 1 || d[0] != own[0] {
			t.Errorf("Get Session Info %x from another session: cc %#x %x %v, want handle %d", req, cc, d, err, own[0])
		}
	}
	for _, req := range [][]byte{{0x03}, {0xfe, 0x3f}, {0xff, 1, 2, 3, 4}} {
		if cc, d, err := a.call(netFnApp, cmdGetSessionInfo, req...); err != nil || cc != ccInvalidData {
			t.Errorf("Get Session Info %x (no such session): cc %#x %x %v, want 0xcc", req, cc, d, err)
		}
	}
}
