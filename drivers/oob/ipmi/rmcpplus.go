package ipmi

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"

	"github.com/slipway-dev/slipway/drivers"
	goipmi "github.com/vmware/goipmi"
)

// A native IPMI v2.0 / RMCP+ remote console (IPMI v2.0 sections 13.15 to
// 13.33): Open Session, RAKP 1 to 4, session keys, then IPMI messages
// encrypted and authenticated as the cipher suite says. Nothing is ever
// handed to another process: the password only keys the HMACs.

// RMCP+ payload types (IPMI v2.0 table 13-16).
const (
	payloadIPMI        = 0x00
	payloadOpenSessReq = 0x10
	payloadOpenSessRsp = 0x11
	payloadRAKP1       = 0x12
	payloadRAKP2       = 0x13
	payloadRAKP3       = 0x14
	payloadRAKP4       = 0x15
)

// Algorithm numbers (IPMI v2.0 tables 13-17 to 13-19).
const (
	rakpHMACSHA1   = 0x01
	rakpHMACSHA256 = 0x03

	integNone          = 0x00
	integHMACSHA1_96   = 0x01
	integHMACSHA256128 = 0x04

	confNone      = 0x00
	confAESCBC128 = 0x01
)

// RMCP+ status codes (IPMI v2.0 table 13-15) the console acts on.
const (
	rmcpOK                  = 0x00
	rmcpInsufficientRes     = 0x01
	rmcpInvalidSessionID    = 0x02
	rmcpInvalidRole         = 0x09
	rmcpUnauthorizedRole    = 0x0a
	rmcpInsufficientRes2    = 0x0b // insufficient resources for the role
	rmcpUnauthorizedName    = 0x0d
	rmcpInvalidIntegrityVal = 0x0f
	rmcpNoCipherSuiteMatch  = 0x11
)

var rmcpStatusText = map[byte]string{
	0x01: "insufficient resources to create a session",
	0x02: "invalid session ID",
	0x03: "invalid payload type",
	0x04: "invalid authentication algorithm",
	0x05: "invalid integrity algorithm",
	0x06: "no matching authentication payload",
	0x07: "no matching integrity payload",
	0x08: "inactive session ID",
	0x09: "invalid role",
	0x0a: "unauthorized role or privilege level requested",
	0x0b: "insufficient resources to create a session at the requested role",
	0x0c: "invalid name length",
	0x0d: "unauthorized name",
	0x0e: "unauthorized GUID",
	0x0f: "invalid integrity check value",
	0x10: "invalid confidentiality algorithm",
	0x11: "no cipher suite match with proposed security algorithms",
	0x12: "illegal or unrecognized parameter",
}

func rmcpStatus(s byte) string {
	if t, ok := rmcpStatusText[s]; ok {
		return fmt.Sprintf("status 0x%02x (%s)", s, t)
	}
	return fmt.Sprintf("status 0x%02x", s)
}

// cipherSuite is a standard cipher suite (IPMI v2.0 table 22-20). Offered:
// the HMAC-SHA1 suites 1-3 and the HMAC-SHA256 suites 15-17. Not offered:
// suite 0 (no authentication at all), the HMAC-MD5 suites 6-8 (deprecated,
// and implementations disagree on the HMAC-MD5-128 integrity key: OpenIPMI
// keys it with the SIK, others with K1), MD5-128 and xRC4 suites, OEM
// suites.
type cipherSuite struct {
	id                int
	auth, integ, conf byte
}

var cipherSuites = map[int]cipherSuite{
	1:  {1, rakpHMACSHA1, integNone, confNone},
	2:  {2, rakpHMACSHA1, integHMACSHA1_96, confNone},
	3:  {3, rakpHMACSHA1, integHMACSHA1_96, confAESCBC128},
	15: {15, rakpHMACSHA256, integNone, confNone},
	16: {16, rakpHMACSHA256, integHMACSHA256128, confNone},
	17: {17, rakpHMACSHA256, integHMACSHA256128, confAESCBC128},
}

func (c cipherSuite) hash() func() hash.Hash {
	if c.auth == rakpHMACSHA256 {
		return sha256.New
	}
	return sha1.New
}

// mac is the HMAC of the suite's authentication algorithm.
func (c cipherSuite) mac(key []byte, parts ...[]byte) []byte {
	m := hmac.New(c.hash(), key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// icvLen is the length of the RAKP 4 integrity check value: the HMAC
// truncated as the suite's integrity algorithm truncates (12 bytes for
// SHA1, 16 for SHA256).
func (c cipherSuite) icvLen() int {
	if c.auth == rakpHMACSHA1 {
		return 12
	}
	return 16
}

// integrityLen is the length of the session trailer's AuthCode.
func (c cipherSuite) integrityLen() int {
	switch c.integ {
	case integHMACSHA1_96:
		return 12
	case integHMACSHA256128:
		return 16
	}
	return 0
}

// v2Session is an active RMCP+ session.
type v2Session struct {
	l         *link
	suite     cipherSuite
	user      string
	priv      byte
	consoleID uint32 // remote console session ID: the BMC sends it
	bmcID     uint32 // managed system session ID: the console sends it
	guid      [16]byte
	k1, k2    []byte
	seq       uint32 // last session sequence number sent
	rqSeq     byte
	seen      map[uint32]bool // inbound session sequence numbers accepted
	active    bool
	privSet   bool // Set Session Privilege Level already done
}

// openV2 runs Open Session and RAKP 1 to 4, then raises the session to
// the requested privilege.
func openV2(l *link, suite cipherSuite, user string, password []byte, priv byte) (*v2Session, error) {
	s := &v2Session{l: l, suite: suite, user: user, priv: priv, seen: map[uint32]bool{}}
	for s.consoleID == 0 {
		s.consoleID = binary.LittleEndian.Uint32(random(4))
	}
	if err := s.openSession(); err != nil {
		return nil, err
	}
	// K_UID: the password NUL-padded to 20 bytes. No BMC key is
	// configured, so K_G is K_UID too.
	kuid := make([]byte, 20)
	copy(kuid, password)
	defer clear(kuid)
	if err := s.rakp(kuid); err != nil {
		if s.active {
			s.close()
		}
		return nil, err
	}
	s.active = true
	if !s.privSet {
		if err := setPrivilege(s, priv); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// openSession negotiates the cipher suite (Open Session Request/Response).
func (s *v2Session) openSession() error {
	var bmcID uint32
	var cur byte
	err := s.l.exchange("RMCP+ Open Session", func(attempt int) []byte {
		cur = tag(0, attempt)
		p := []byte{cur, s.priv, 0, 0}
		p = append(p, le32(s.consoleID)...)
		p = append(p, 0x00, 0, 0, 8, s.suite.auth, 0, 0, 0)
		p = append(p, 0x01, 0, 0, 8, s.suite.integ, 0, 0, 0)
		p = append(p, 0x02, 0, 0, 8, s.suite.conf, 0, 0, 0)
		return v2Packet(payloadOpenSessReq, 0, 0, p)
	}, func(pkt []byte) (bool, error) {
		p, ok := preSession(pkt, payloadOpenSessRsp)
		if !ok || len(p) < 8 || p[0] != cur || binary.LittleEndian.Uint32(p[4:8]) != s.consoleID {
			return false, nil
		}
		if err := s.checkOpenSession(p); err != nil {
			return true, err
		}
		bmcID = binary.LittleEndian.Uint32(p[8:12])
		return true, nil
	})
	var nr *noReplyError
	if errors.As(err, &nr) && !nr.refused && s.suite.id != 3 {
		// ipmi_sim, for one, drops an Open Session for the SHA256 suites.
		nr.hint = fmt.Sprintf("a BMC may ignore a cipher suite it does not support: try 3 rather than %d", s.suite.id)
	}
	if err != nil {
		return err
	}
	s.bmcID = bmcID
	return nil
}

// checkOpenSession checks an Open Session Response for this console: its
// status, and the algorithms of the cipher suite asked for.
func (s *v2Session) checkOpenSession(p []byte) error {
	switch st := p[1]; {
	case st == rmcpOK:
	case st == rmcpInsufficientRes || st == rmcpInsufficientRes2:
		return drivers.Errorf(drivers.Transient, "BMC %s has no free session: %s", s.l.target, rmcpStatus(st))
	case st == rmcpInvalidRole || st == rmcpUnauthorizedRole:
		return privilegeError(s.l.target, s.user, s.priv, rmcpStatus(st))
	case st >= 0x04 && st <= 0x07 || st == 0x10 || st == rmcpNoCipherSuiteMatch:
		return drivers.Errorf(drivers.Permanent, "BMC %s does not support cipher suite %d: %s", s.l.target, s.suite.id, rmcpStatus(st))
	default:
		return drivers.Errorf(drivers.Permanent, "BMC %s refused RMCP+ Open Session: %s", s.l.target, rmcpStatus(st))
	}
	if len(p) < 36 {
		return drivers.Errorf(drivers.Transient, "BMC %s: short Open Session Response", s.l.target)
	}
	if p[16]&0x3f != s.suite.auth || p[24]&0x3f != s.suite.integ || p[32]&0x3f != s.suite.conf {
		return drivers.Errorf(drivers.Permanent, "BMC %s answered cipher suite %d with other algorithms (%d/%d/%d)",
			s.l.target, s.suite.id, p[16]&0x3f, p[24]&0x3f, p[32]&0x3f)
	}
	return nil
}

// rakp runs RAKP 1 to 4 and derives the session keys.
func (s *v2Session) rakp(kuid []byte) error {
	rm := random(16)
	role := s.priv | 0x10 // name-only lookup
	uname := []byte(s.user)
	ul := []byte{role, byte(len(uname))}
	var rc, code []byte
	var cur byte
	err := s.l.exchange("RAKP Message 1", func(attempt int) []byte {
		cur = tag(1, attempt)
		p := []byte{cur, 0, 0, 0}
		p = append(p, le32(s.bmcID)...)
		p = append(p, rm...)
		p = append(p, role, 0, 0, byte(len(uname)))
		p = append(p, uname...)
		// Only the answer to the last RAKP 1 sent counts (its tag): a BMC
		// draws a new random number for each.
		return v2Packet(payloadRAKP1, 0, 0, p)
	}, func(pkt []byte) (bool, error) {
		p, ok := preSession(pkt, payloadRAKP2)
		if !ok || len(p) < 8 || p[0] != cur {
			return false, nil
		}
		if p[1] != rmcpOK {
			// A failed RAKP 2 may carry a zero console session ID.
			if id := binary.LittleEndian.Uint32(p[4:8]); id != 0 && id != s.consoleID {
				return false, nil
			}
			return true, s.rakpFailure("RAKP Message 2", p[1])
		}
		if binary.LittleEndian.Uint32(p[4:8]) != s.consoleID {
			return false, nil
		}
		n := s.suite.hash()().Size()
		if len(p) < 40+n {
			return true, drivers.Errorf(drivers.Transient, "BMC %s: short RAKP Message 2", s.l.target)
		}
		rc = append([]byte(nil), p[8:24]...)
		copy(s.guid[:], p[24:40])
		code = append([]byte(nil), p[40:40+n]...)
		return true, nil
	})
	if err != nil {
		return err
	}
	// RAKP 2's HMAC proves the BMC holds the same password.
	want := s.suite.mac(kuid, le32(s.consoleID), le32(s.bmcID), rm, rc, s.guid[:], ul, uname)
	if !hmac.Equal(want, code) {
		// Tell the BMC, so that it ends the handshake now.
		fail := append([]byte{tag(2, 0), rmcpInvalidIntegrityVal, 0, 0}, le32(s.bmcID)...)
		s.l.send(v2Packet(payloadRAKP3, 0, 0, fail))
		return credentialsError(s.l.target, s.user)
	}
	sik := s.suite.mac(kuid, rm, rc, ul, uname)
	s.k1 = s.suite.mac(sik, bytes.Repeat([]byte{1}, 20))
	s.k2 = s.suite.mac(sik, bytes.Repeat([]byte{2}, 20))
	auth3 := s.suite.mac(kuid, rc, le32(s.consoleID), ul, uname)
	return s.rakp3(auth3, func(icv []byte) bool {
		return hmac.Equal(s.suite.mac(sik, rm, le32(s.bmcID), s.guid[:])[:s.suite.icvLen()], icv)
	})
}

// errRAKP4Lost: a retransmitted RAKP 3 found the handshake already over,
// so the BMC took an earlier one and its RAKP 4 was lost.
var errRAKP4Lost = errors.New("RAKP 4 lost")

// rakp3 sends RAKP Message 3 and checks RAKP Message 4 with verify. A
// BMC activates the session on the first RAKP 3 it accepts and ignores
// (ipmi_sim) or refuses with "invalid session ID" (others) a
// retransmission, so when RAKP 4 does not come the session may well be
// active: with an integrity algorithm the console then tries it, sending
// Set Session Privilege Level in the session. An answer whose integrity
// trailer verifies (keyed with K1, so from a BMC that derived the same
// session key from the password) stands in for RAKP 4. Without one, RAKP
// 3 is sent again, after the backoff, up to the retries.
func (s *v2Session) rakp3(auth3 []byte, verify func(icv []byte) bool) error {
	saved := s.l.policy
	defer func() { s.l.policy = saved }()
	s.l.policy.retries = 0 // this loop retries
	for attempt := 0; attempt <= saved.retries; attempt++ {
		if attempt > 0 {
			if err := s.l.sleep(saved.pause(attempt)); err != nil {
				return ctxError(s.l.ctx, s.l.target, "RAKP Message 3")
			}
		}
		icv, err := s.rakp3Once(attempt, auth3)
		if err == nil {
			if !verify(icv) {
				return drivers.Errorf(drivers.Permanent, "BMC %s: RAKP Message 4 does not verify: the session keys differ", s.l.target)
			}
			return nil
		}
		var nr *noReplyError
		if !errors.Is(err, errRAKP4Lost) && (!errors.As(err, &nr) || nr.refused) {
			return err
		}
		if s.suite.integ == integNone {
			continue
		}
		if ok, err := s.trySession(); ok || err != nil {
			return err
		}
	}
	return drivers.NewError(drivers.Transient, &noReplyError{target: s.l.target, what: "RAKP Message 3",
		attempts: saved.retries + 1, timeout: saved.timeout})
}

// rakp3Once sends one RAKP Message 3 and answers RAKP Message 4's
// integrity check value.
func (s *v2Session) rakp3Once(attempt int, auth3 []byte) ([]byte, error) {
	var icv []byte
	var cur byte
	err := s.l.exchange("RAKP Message 3", func(int) []byte {
		cur = tag(2, attempt)
		p := append([]byte{cur, rmcpOK, 0, 0}, le32(s.bmcID)...)
		p = append(p, auth3...)
		return v2Packet(payloadRAKP3, 0, 0, p)
	}, func(pkt []byte) (bool, error) {
		p, ok := preSession(pkt, payloadRAKP4)
		if !ok || len(p) < 8 || p[0] != cur {
			return false, nil
		}
		if id := binary.LittleEndian.Uint32(p[4:8]); id != s.consoleID && (p[1] == rmcpOK || id != 0) {
			return false, nil
		}
		if p[1] == rmcpInvalidSessionID && attempt > 0 {
			return true, errRAKP4Lost
		}
		if p[1] != rmcpOK {
			return true, s.rakpFailure("RAKP Message 4", p[1])
		}
		if len(p) < 8+s.suite.icvLen() {
			return true, drivers.Errorf(drivers.Transient, "BMC %s: short RAKP Message 4", s.l.target)
		}
		icv = append([]byte(nil), p[8:8+s.suite.icvLen()]...)
		return true, nil
	})
	return icv, err
}

// trySession tries the session RAKP 4 of which did not come, with Set
// Session Privilege Level in it: ok when an answer verified (the session
// is active; err says whether the privilege was granted). Not ok: send
// RAKP 3 again (err set only when the caller's context ended).
func (s *v2Session) trySession() (bool, error) {
	s.active = true
	p, err := s.do(privilegeRequest(s.priv))
	if err == nil {
		s.privSet = p.cc == goipmi.CommandCompleted
		if !s.privSet {
			return true, privilegeError(s.l.target, s.user, s.priv, "Set Session Privilege Level: "+ccError(p.cc))
		}
		return true, nil
	}
	s.active = false
	if s.l.ctx.Err() != nil {
		return false, ctxError(s.l.ctx, s.l.target, "RAKP Message 3")
	}
	return false, nil
}

// rakpFailure maps a RAKP 2 or 4 status.
func (s *v2Session) rakpFailure(msg string, st byte) error {
	switch st {
	case rmcpUnauthorizedName, rmcpInvalidIntegrityVal:
		return credentialsError(s.l.target, s.user)
	case rmcpInvalidRole, rmcpUnauthorizedRole:
		return privilegeError(s.l.target, s.user, s.priv, rmcpStatus(st))
	case rmcpInsufficientRes, rmcpInsufficientRes2, rmcpInvalidSessionID:
		// The handshake was lost (a retransmission after the BMC moved
		// on, or a session that timed out): a new one may work.
		return drivers.Errorf(drivers.Transient, "BMC %s: %s: %s", s.l.target, msg, rmcpStatus(st))
	}
	return drivers.Errorf(drivers.Permanent, "BMC %s: %s: %s", s.l.target, msg, rmcpStatus(st))
}

// tag is the message tag of a handshake step's attempt, so that the answer
// to an older attempt is told apart.
func tag(step, attempt int) byte { return byte(step<<5 | attempt&0x1f) }

// preSession returns the payload of an unauthenticated RMCP+ packet of
// the given payload type outside any session.
func preSession(pkt []byte, payloadType byte) ([]byte, bool) {
	h, ok := parseV2(pkt)
	if !ok || h.payloadType != payloadType || h.encrypted || h.authenticated || h.sid != 0 {
		return nil, false
	}
	return h.payload, true
}

// v2Header is a parsed RMCP+ session header.
type v2Header struct {
	encrypted, authenticated bool
	payloadType              byte
	sid, seq                 uint32
	payload                  []byte
	end                      int // offset of the session trailer
}

func parseV2(pkt []byte) (v2Header, bool) {
	const hdr = rmcpHeaderLen + 12 // auth type, payload type, sid, seq, length
	if len(pkt) < hdr || pkt[0] != rmcpVersion || pkt[3] != rmcpClassIPMI || pkt[4] != authRMCPPlus {
		return v2Header{}, false
	}
	h := v2Header{
		encrypted:     pkt[5]&0x80 != 0,
		authenticated: pkt[5]&0x40 != 0,
		payloadType:   pkt[5] & 0x3f,
		sid:           binary.LittleEndian.Uint32(pkt[6:10]),
		seq:           binary.LittleEndian.Uint32(pkt[10:14]),
	}
	n := int(binary.LittleEndian.Uint16(pkt[14:16]))
	if len(pkt) < hdr+n {
		return v2Header{}, false
	}
	h.payload = pkt[hdr : hdr+n]
	h.end = hdr + n
	return h, true
}

// v2Packet frames a payload outside a session: no encryption, no trailer.
func v2Packet(payloadType byte, sid, seq uint32, payload []byte) []byte {
	p := append(rmcpHeader(), authRMCPPlus, payloadType)
	p = binary.LittleEndian.AppendUint32(p, sid)
	p = binary.LittleEndian.AppendUint32(p, seq)
	p = binary.LittleEndian.AppendUint16(p, uint16(len(payload)))
	return append(p, payload...)
}

// packet frames an IPMI message in the session: encrypted (AES-CBC-128
// with K2) and authenticated (integrity trailer keyed with K1) as the
// suite says, with the next session sequence number.
func (s *v2Session) packet(msg []byte) []byte { return s.framed(payloadIPMI, msg) }

// framed frames a payload of type pt in the session, as packet does.
func (s *v2Session) framed(pt byte, msg []byte) []byte {
	s.seq++
	if s.seq == 0 {
		s.seq = 1
	}
	if s.suite.conf == confAESCBC128 {
		pt |= 0x80
		msg = s.encrypt(msg)
	}
	if s.suite.integ != integNone {
		pt |= 0x40
	}
	p := v2Packet(pt, s.bmcID, s.seq, msg)
	if s.suite.integ != integNone {
		// Integrity pad: auth type through next header is a multiple of 4.
		n := (4 - (len(p)-rmcpHeaderLen+2)%4) % 4
		p = append(p, bytes.Repeat([]byte{0xff}, n)...)
		p = append(p, byte(n), rmcpClassIPMI)
		p = append(p, s.integrity(p[rmcpHeaderLen:])...)
	}
	return p
}

// open returns the IPMI message of an authentic session packet, or false
// for anything else.
func (s *v2Session) open(pkt []byte) ([]byte, bool) { return s.openPayload(pkt, payloadIPMI) }

// openPayload returns the payload of an authentic session packet of type
// pt, or false for anything else (a replayed sequence number included).
func (s *v2Session) openPayload(pkt []byte, pt byte) ([]byte, bool) {
	h, ok := parseV2(pkt)
	if !ok || h.payloadType != pt || h.sid != s.consoleID || s.seen[h.seq] {
		return nil, false
	}
	if s.suite.integ != integNone {
		n := s.suite.integrityLen()
		end := len(pkt) - n
		if !h.authenticated || end-2 < h.end || pkt[end-1] != rmcpClassIPMI || h.end+int(pkt[end-2])+2 != end {
			return nil, false
		}
		if !hmac.Equal(s.integrity(pkt[rmcpHeaderLen:end]), pkt[end:]) {
			return nil, false
		}
	}
	msg := h.payload
	if s.suite.conf == confAESCBC128 {
		if !h.encrypted {
			return nil, false
		}
		if msg, ok = s.decrypt(msg); !ok {
			return nil, false
		}
	}
	s.remember(h.seq)
	return msg, true
}

// seenWindow is how many inbound sequence numbers a session remembers to
// refuse replays; a long-lived session (a console) forgets older ones.
const seenWindow = 1024

func (s *v2Session) remember(seq uint32) {
	s.seen[seq] = true
	if len(s.seen) <= 2*seenWindow {
		return
	}
	for k := range s.seen {
		if seq-k > seenWindow {
			delete(s.seen, k)
		}
	}
}

func (s *v2Session) integrity(b []byte) []byte {
	h := sha1.New
	if s.suite.integ == integHMACSHA256128 {
		h = sha256.New
	}
	m := hmac.New(h, s.k1)
	m.Write(b)
	return m.Sum(nil)[:s.suite.integrityLen()]
}

// encrypt is AES-CBC-128 (IPMI v2.0 section 13.29): a random IV, then the
// payload padded with 1, 2, 3... and the pad length, keyed with K2's first
// 16 bytes.
func (s *v2Session) encrypt(p []byte) []byte {
	n := (aes.BlockSize - (len(p)+1)%aes.BlockSize) % aes.BlockSize
	plain := append([]byte(nil), p...)
	for i := 1; i <= n; i++ {
		plain = append(plain, byte(i))
	}
	plain = append(plain, byte(n))
	out := make([]byte, aes.BlockSize+len(plain))
	copy(out, random(aes.BlockSize))
	blk, _ := aes.NewCipher(s.k2[:16]) // 16 bytes: cannot fail
	cipher.NewCBCEncrypter(blk, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], plain)
	return out
}

func (s *v2Session) decrypt(p []byte) ([]byte, bool) {
	if len(p) < 2*aes.BlockSize || len(p)%aes.BlockSize != 0 {
		return nil, false
	}
	blk, _ := aes.NewCipher(s.k2[:16])
	plain := make([]byte, len(p)-aes.BlockSize)
	cipher.NewCBCDecrypter(blk, p[:aes.BlockSize]).CryptBlocks(plain, p[aes.BlockSize:])
	n := int(plain[len(plain)-1])
	if n >= aes.BlockSize || n+1 > len(plain) {
		return nil, false
	}
	return plain[:len(plain)-1-n], true
}

// do sends an IPMI request in the session and returns its response.
func (s *v2Session) do(r request) (reply, error) {
	s.rqSeq = (s.rqSeq + 1) & 0x3f
	rqSeq := s.rqSeq
	msg := r.message(rqSeq)
	var out reply
	err := s.l.exchange(r.name, func(int) []byte { return s.packet(msg) }, acceptReply(s.open, r, rqSeq, &out))
	return out, err
}

// close ends the session with Close Session: waiting for the answer once
// when the caller's context allows, else sending it and going.
func (s *v2Session) close() {
	if !s.active {
		return
	}
	s.active = false
	r := request{netFn: goipmi.NetworkFunctionApp, cmd: goipmi.CommandCloseSession,
		data: encode(goipmi.CloseSessionRequest{SessionID: s.bmcID}), name: "Close Session"}
	closeSession(s.l, func() { s.rqSeq = (s.rqSeq + 1) & 0x3f; s.l.send(s.packet(r.message(s.rqSeq))) },
		func() { _, _ = s.do(r) })
}

func (s *v2Session) systemGUID() [16]byte { return s.guid }

func random(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return b
}
