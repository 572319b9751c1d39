package bmc

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"encoding/binary"
	"net"
	"time"
)

// Privilege levels (IPMI v2.0 section 6.8).
const (
	privCallback = 0x01
	privUser     = 0x02
	privOperator = 0x03
	privAdmin    = 0x04
	privOEM      = 0x05
)

// RMCP+ status codes (IPMI v2.0 table 13-15).
const (
	rmcpOK                  = 0x00
	rmcpInsufficientRes     = 0x01
	rmcpInvalidSessionID    = 0x02
	rmcpInvalidAuthAlg      = 0x04
	rmcpInvalidIntegAlg     = 0x05
	rmcpInvalidRole         = 0x09
	rmcpUnauthorizedRole    = 0x0a
	rmcpInvalidNameLength   = 0x0c
	rmcpUnauthorizedName    = 0x0d
	rmcpInvalidIntegrityVal = 0x0f
	rmcpInvalidConfAlg      = 0x10
	rmcpNoCipherSuiteMatch  = 0x11
	rmcpIllegalParameter    = 0x12
)

type sessState int

const (
	stateChallenge sessState = iota // v1.5: Get Session Challenge answered
	stateOpen                       // v2.0: Open Session answered
	stateRAKP2                      // v2.0: RAKP 2 sent
	stateActive
)

// session is one IPMI session or handshake. Its fields are guarded by
// BMC.mu; cs is not changed once the session is active.
type session struct {
	id       uint32 // managed system (BMC) session ID
	handle   byte   // session handle (Get Session Info), 1 to maxSessions
	remoteID uint32 // remote console session ID (v2.0)
	v2       bool
	state    sessState
	lastUsed time.Time
	maxPriv  byte
	priv     byte
	outSeq   uint32 // session sequence number of the next reply
	inSeq    uint32 // highest inbound session sequence number accepted

	// IPMI v1.5
	authType  byte
	challenge [16]byte
	inSeqInit uint32 // initial inbound sequence number given to the console
	outInit   uint32 // initial outbound sequence number the console asked for

	// IPMI v2.0
	cs     cipherState
	rm, rc [16]byte
	role   byte // RAKP 1 role byte as sent (privilege and lookup bit)
	uname  []byte

	// retransmission detection: key of the request being executed
	inFlight string

	addr *net.UDPAddr // the console's address, as of its last authentic packet (SOL output goes there)
}

// seqWindow is how far an inbound session sequence number may stray from
// the highest one accepted so far (the spec's sliding window is 8 back and
// 16 ahead; this BMC is more forgiving and accepts replays within it).
const seqWindow = 32

// acceptSeqLocked checks an inbound sequence number loosely and advances
// the high-water mark.
func (s *session) acceptSeqLocked(seq uint32) bool {
	d := int32(seq - s.inSeq)
	if d > seqWindow || d < -seqWindow {
		return false
	}
	if d > 0 {
		s.inSeq = seq
	}
	return true
}

// newSessionLocked creates a session with a fresh random ID, or returns nil
// when the BMC has no free session slot.
func (b *BMC) newSessionLocked(now time.Time) *session {
	b.sweepLocked(now, false)
	if len(b.sessions) >= maxSessions {
		b.sweepLocked(now, true)
		if len(b.sessions) >= maxSessions {
			return nil
		}
	}
	var id uint32
	for id == 0 || b.sessions[id] != nil {
		var r [4]byte
		if _, err := rand.Read(r[:]); err != nil {
			panic(err)
		}
		id = binary.LittleEndian.Uint32(r[:])
	}
	s := &session{id: id, lastUsed: now, handle: b.freeHandleLocked()}
	b.sessions[id] = s
	return s
}

// freeHandleLocked is the lowest session handle no session holds; there
// is one, as there are fewer sessions than maxSessions when it is called.
func (b *BMC) freeHandleLocked() byte {
	used := make(map[byte]bool, len(b.sessions))
	for _, x := range b.sessions {
		used[x.handle] = true
	}
	h := byte(1)
	for used[h] {
		h++
	}
	return h
}

func (b *BMC) deleteSessionLocked(s *session) {
	if b.sessions[s.id] != s {
		return
	}
	delete(b.sessions, s.id)
	if b.sol != nil && b.sol.s == s {
		b.endSOLLocked()
	}
	if s.state == stateActive {
		b.closedSess.Add(1)
	}
}

// sweepLocked ends idle sessions; unless force, at most once a second.
func (b *BMC) sweepLocked(now time.Time, force bool) {
	if !force && now.Sub(b.lastSweep) < time.Second {
		return
	}
	b.lastSweep = now
	for _, s := range b.sessions {
		idle := now.Sub(s.lastUsed)
		switch {
		case s.state == stateActive && idle > b.opts.sessionTimeout:
			b.deleteSessionLocked(s)
		case s.state != stateActive && idle > min(handshakeTimeout, b.opts.sessionTimeout):
			b.deleteSessionLocked(s)
			b.abandoned.Add(1)
		}
	}
}

// password16 is the v1.5 password: NUL padded (or cut) to 16 bytes.
func (b *BMC) password16() []byte { return pad16(b.opts.Password) }

// kuid is the v2.0 user key: the password NUL padded to 20 bytes.
func (b *BMC) kuid() []byte {
	k := make([]byte, 20)
	copy(k, b.opts.Password)
	return k
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// ---- IPMI v1.5 ----

func (b *BMC) processV15(pkt []byte, addr *net.UDPAddr) []byte {
	p, err := parseV15(pkt)
	if err != nil {
		return nil
	}
	req, err := parseIPMIRequest(p.msg)
	if err != nil {
		return nil
	}
	if p.sid == 0 {
		if p.authType != authNone {
			return nil
		}
		msg := b.preSession(req, false)
		if msg == nil {
			return nil
		}
		return buildV15(authNone, nil, 0, 0, msg)
	}

	now := time.Now()
	pw := b.password16()
	b.mu.Lock()
	b.sweepLocked(now, false)
	s := b.sessions[p.sid]
	if s == nil || s.v2 || p.authType != s.authType {
		b.mu.Unlock()
		return nil
	}
	if !v15AuthOK(p, pw) {
		// Like ipmi_sim (and as the spec says for failed message
		// authentication), a bad auth code is dropped without a reply.
		b.mu.Unlock()
		if s.state == stateChallenge {
			b.authErr.Add(1)
		}
		return nil
	}
	s.remember(addr)
	if req.netFn == netFnApp && req.cmd == cmdActivateSession {
		cc, data, ok := b.activateLocked(s, req, now)
		seq := s.outInit // the reply carries the initial outbound number (section 22.17), as ipmi_sim's does
		b.mu.Unlock()
		if !ok {
			return nil
		}
		b.countCommand(req.netFn, req.cmd)
		return buildV15(s.authType, pw, s.id, seq, req.response(cc, data))
	}
	if s.state != stateActive {
		b.mu.Unlock()
		return nil
	}
	msg, seq := b.runInSessionLocked(s, req, p.seq, now)
	if msg == nil {
		return nil
	}
	return buildV15(s.authType, pw, s.id, seq, msg)
}

// runInSessionLocked runs req in session s if inSeq is a sequence number
// the session accepts, and returns the reply with the session's sequence
// number for it; nil when the request is dropped or has no reply. b.mu is
// held on entry and released before the command runs.
func (b *BMC) runInSessionLocked(s *session, req *ipmiRequest, inSeq uint32, now time.Time) ([]byte, uint32) {
	if !s.acceptSeqLocked(inSeq) {
		b.mu.Unlock()
		return nil, 0
	}
	s.lastUsed = now
	b.mu.Unlock()

	msg := b.sessionCommand(s, req)
	if msg == nil {
		return nil, 0
	}
	b.mu.Lock()
	seq := s.outSeq
	s.outSeq++
	b.mu.Unlock()
	return msg, seq
}

// activateLocked handles Activate Session (IPMI v2.0 section 22.17) for a
// session whose header auth code has been checked. ok false drops the packet.
func (b *BMC) activateLocked(s *session, req *ipmiRequest, now time.Time) (cc byte, data []byte, ok bool) {
	d := req.data
	if len(d) < 22 {
		return ccReqDataLen, nil, true
	}
	at, maxPriv := d[0]&0x0f, d[1]&0x0f
	reply := func() []byte {
		r := []byte{s.authType}
		r = binary.LittleEndian.AppendUint32(r, s.id)
		r = binary.LittleEndian.AppendUint32(r, s.inSeqInit)
		return append(r, s.maxPriv)
	}
	if s.state == stateActive {
		// A retransmission whose reply was lost: answer it again.
		return ccOK, reply(), true
	}
	if at != s.authType || !bytes.Equal(d[2:18], s.challenge[:]) {
		b.authErr.Add(1)
		return 0, nil, false
	}
	if maxPriv == 0 || maxPriv > privOEM {
		return ccInvalidData, nil, true
	}
	if maxPriv > privAdmin {
		return 0x86, nil, true // requested privilege level exceeds limit
	}
	s.state = stateActive
	s.lastUsed = now
	s.maxPriv = maxPriv
	s.priv = min(privUser, maxPriv)
	s.outInit = binary.LittleEndian.Uint32(d[18:22])
	s.outSeq = s.outInit + 1 // the Activate Session reply itself carries outInit
	if s.outSeq == 0 {
		s.outSeq = 1
	}
	for s.inSeqInit == 0 {
		s.inSeqInit = binary.LittleEndian.Uint32(randomBytes(4))
	}
	s.inSeq = s.inSeqInit - 1
	b.opened.Add(1)
	return ccOK, reply(), true
}

// getSessionChallenge handles Get Session Challenge (section 22.16).
func (b *BMC) getSessionChallenge(d []byte) (byte, []byte) {
	if len(d) < 17 {
		return ccReqDataLen, nil
	}
	at := d[0] & 0x0f
	if b.v15AuthTypes()&(1<<at) == 0 {
		return ccInvalidData, nil
	}
	name := d[1:17]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	if len(name) == 0 {
		b.authErr.Add(1)
		return 0x82, nil // null user name not enabled
	}
	if string(name) != b.opts.Username {
		b.authErr.Add(1)
		return 0x81, nil // invalid user name
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.newSessionLocked(time.Now())
	if s == nil {
		return ccOutOfSpace, nil
	}
	s.state = stateChallenge
	s.authType = at
	copy(s.challenge[:], randomBytes(16))
	return ccOK, append(le32(s.id), s.challenge[:]...)
}

// v15AuthTypes is the Get Channel Authentication Capabilities bit mask of
// v1.5 authentication types: MD2, MD5, straight password, and none only
// when unauthenticated access is allowed.
func (b *BMC) v15AuthTypes() byte {
	t := byte(1<<authMD2 | 1<<authMD5 | 1<<authPassword)
	if b.opts.AllowCipherZero {
		t |= 1 << authNone
	}
	return t
}

// sessionCommand executes a request of an active session and returns the
// response message, or nil for a retransmission of a request still being
// executed (its reply will answer both).
func (b *BMC) sessionCommand(s *session, req *ipmiRequest) []byte {
	key := req.key()
	b.mu.Lock()
	if s.inFlight == key {
		b.mu.Unlock()
		return nil
	}
	s.inFlight = key
	b.mu.Unlock()
	cc, data := b.execute(s, req)
	b.mu.Lock()
	if s.inFlight == key {
		s.inFlight = ""
	}
	b.mu.Unlock()
	return req.response(cc, data)
}

// preSession answers the session-less commands; others are dropped.
func (b *BMC) preSession(req *ipmiRequest, v2 bool) []byte {
	if req.netFn != netFnApp {
		return nil
	}
	var cc byte
	var data []byte
	switch req.cmd {
	case cmdGetChanAuthCaps:
		cc, data = b.getChannelAuthCaps(req.data)
	case cmdGetChanCipherSuites:
		cc, data = b.getChannelCipherSuites(req.data)
	case cmdGetSessionChallenge:
		if v2 {
			return nil
		}
		cc, data = b.getSessionChallenge(req.data)
	default:
		return nil
	}
	b.countCommand(req.netFn, req.cmd)
	return req.response(cc, data)
}

// ---- IPMI v2.0 / RMCP+ ----

func (b *BMC) processV20(pkt []byte, addr *net.UDPAddr) []byte {
	p, err := parseV20(pkt)
	if err != nil {
		return nil
	}
	if p.sid == 0 {
		return b.processV20Sessionless(p)
	}

	now := time.Now()
	b.mu.Lock()
	b.sweepLocked(now, false)
	s := b.sessions[p.sid]
	if s == nil || !s.v2 || s.state != stateActive {
		b.mu.Unlock()
		return nil
	}
	cs := s.cs
	b.mu.Unlock()

	payload, ok := cs.open(p)
	if !ok {
		return nil
	}
	b.mu.Lock()
	s.remember(addr)
	b.mu.Unlock()
	switch p.payloadType {
	case payloadSOL:
		return b.solInbound(s, p.seq, payload, now)
	case payloadIPMI:
	default:
		return nil
	}
	req, err := parseIPMIRequest(payload)
	if err != nil {
		return nil
	}
	b.mu.Lock()
	msg, seq := b.runInSessionLocked(s, req, p.seq, now)
	if msg == nil {
		return nil
	}
	return buildV20(payloadIPMI, s.remoteID, seq, msg, &cs)
}

// processV20Sessionless answers the v2.0 packets outside a session: the
// RMCP+ handshake and the pre-session IPMI commands, none of them
// authenticated or encrypted.
func (b *BMC) processV20Sessionless(p *v20Packet) []byte {
	if p.encrypted || p.authenticated {
		return nil
	}
	switch p.payloadType {
	case payloadOpenSessReq:
		return b.openSession(p.payload)
	case payloadRAKP1:
		return b.rakp1(p.payload)
	case payloadRAKP3:
		return b.rakp3(p.payload)
	case payloadIPMI:
		req, err := parseIPMIRequest(p.payload)
		if err != nil {
			return nil
		}
		msg := b.preSession(req, true)
		if msg == nil {
			return nil
		}
		return buildV20(payloadIPMI, 0, 0, msg, nil)
	}
	return nil
}

// open checks a session packet's integrity trailer and decrypts its
// payload as the session's cipher suite requires; false drops the packet
// (a missing or wrong trailer, encryption missing or unexpected).
func (c *cipherState) open(p *v20Packet) ([]byte, bool) {
	if c.integ != integNone && (!p.authenticated || !c.checkTrailer(p)) {
		return nil, false
	}
	if c.conf == confNone {
		return p.payload, !p.encrypted
	}
	if !p.encrypted {
		return nil, false
	}
	return c.decrypt(p.payload)
}

// openSession answers an RMCP+ Open Session Request (section 13.17).
func (b *BMC) openSession(d []byte) []byte {
	if len(d) < 32 {
		return nil
	}
	tag, reqPriv, rsid := d[0], d[1]&0x0f, binary.LittleEndian.Uint32(d[4:8])
	fail := func(status byte) []byte {
		r := append([]byte{tag, status, 0, 0}, le32(rsid)...)
		return buildV20(payloadOpenSessRsp, 0, 0, r, nil)
	}
	if d[8] != 0 || d[16] != 1 || d[24] != 2 {
		return fail(rmcpIllegalParameter)
	}
	// A zero payload length asks the BMC to choose: it picks suite 3's.
	alg := func(off int, dflt byte) byte {
		if d[off+3] == 0 {
			return dflt
		}
		return d[off+4] & 0x3f
	}
	auth, integ, conf := alg(8, rakpHMACSHA1), alg(16, integHMACSHA1_96), alg(24, confAESCBC128)
	if rsid == 0 {
		return fail(rmcpInvalidSessionID)
	}
	if reqPriv > privOEM {
		return fail(rmcpInvalidRole)
	}
	if reqPriv == 0 || reqPriv > privAdmin {
		reqPriv = privAdmin // "highest level matching the proposed algorithms"
	}
	if _, ok := b.findSuite(auth, integ, conf); !ok {
		switch {
		case rakpHash(auth) == nil && auth != rakpNone:
			return fail(rmcpInvalidAuthAlg)
		case integ != integNone && integ != integHMACSHA1_96 && integ != integHMACMD5_128 && integ != integHMACSHA256128:
			return fail(rmcpInvalidIntegAlg)
		case conf != confNone && conf != confAESCBC128:
			return fail(rmcpInvalidConfAlg)
		}
		return fail(rmcpNoCipherSuiteMatch)
	}
	b.mu.Lock()
	s := b.newSessionLocked(time.Now())
	if s == nil {
		b.mu.Unlock()
		return fail(rmcpInsufficientRes)
	}
	s.v2 = true
	s.state = stateOpen
	s.remoteID = rsid
	s.maxPriv = reqPriv
	s.cs = cipherState{auth: auth, integ: integ, conf: conf}
	sid := s.id
	b.mu.Unlock()

	r := []byte{tag, rmcpOK, reqPriv, 0}
	r = append(r, le32(rsid)...)
	r = append(r, le32(sid)...)
	r = append(r, 0x00, 0, 0, 8, auth, 0, 0, 0)
	r = append(r, 0x01, 0, 0, 8, integ, 0, 0, 0)
	r = append(r, 0x02, 0, 0, 8, conf, 0, 0, 0)
	return buildV20(payloadOpenSessRsp, 0, 0, r, nil)
}

// rakp1 answers RAKP Message 1 with RAKP Message 2 (section 13.20-13.21).
func (b *BMC) rakp1(d []byte) []byte {
	if len(d) < 28 {
		return nil
	}
	tag, sid, role, ulen := d[0], binary.LittleEndian.Uint32(d[4:8]), d[24], int(d[27])
	fail := func(status byte, rsid uint32) []byte {
		r := append([]byte{tag, status, 0, 0}, le32(rsid)...)
		return buildV20(payloadRAKP2, 0, 0, r, nil)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sessions[sid]
	if s == nil || !s.v2 || (s.state != stateOpen && s.state != stateRAKP2) {
		return fail(rmcpInvalidSessionID, 0)
	}
	if ulen > 16 || len(d) < 28+ulen {
		b.deleteSessionLocked(s)
		return fail(rmcpInvalidNameLength, s.remoteID)
	}
	name := d[28 : 28+ulen]
	priv := role & 0x0f
	if priv == 0 || priv > privOEM {
		b.deleteSessionLocked(s)
		return fail(rmcpInvalidRole, s.remoteID)
	}
	if priv > privAdmin || priv > s.maxPriv {
		b.deleteSessionLocked(s)
		return fail(rmcpUnauthorizedRole, s.remoteID)
	}
	if ulen == 0 || string(name) != b.opts.Username {
		b.deleteSessionLocked(s)
		b.authErr.Add(1)
		return fail(rmcpUnauthorizedName, s.remoteID)
	}
	s.state = stateRAKP2
	s.lastUsed = time.Now()
	s.maxPriv = priv
	copy(s.rm[:], d[8:24])
	copy(s.rc[:], randomBytes(16))
	s.role = role
	s.uname = append([]byte(nil), name...)

	guid := b.opts.GUID
	code := rakpHMAC(s.cs.auth, b.kuid(), le32(s.remoteID), le32(s.id), s.rm[:], s.rc[:],
		guid[:], []byte{s.role, byte(ulen)}, s.uname)
	r := append([]byte{tag, rmcpOK, 0, 0}, le32(s.remoteID)...)
	r = append(r, s.rc[:]...)
	r = append(r, guid[:]...)
	r = append(r, code...)
	return buildV20(payloadRAKP2, 0, 0, r, nil)
}

// rakp3 checks RAKP Message 3 and answers RAKP Message 4 (section
// 13.22-13.23), activating the session.
func (b *BMC) rakp3(d []byte) []byte {
	if len(d) < 8 {
		return nil
	}
	tag, status, sid := d[0], d[1], binary.LittleEndian.Uint32(d[4:8])
	fail := func(status byte, rsid uint32) []byte {
		r := append([]byte{tag, status, 0, 0}, le32(rsid)...)
		return buildV20(payloadRAKP4, 0, 0, r, nil)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sessions[sid]
	if s == nil || !s.v2 || s.state != stateRAKP2 {
		return fail(rmcpInvalidSessionID, 0)
	}
	if status != rmcpOK {
		// The console rejected RAKP 2 (for instance its password differs
		// and so the RAKP 2 HMAC did not match): the handshake ends here.
		b.deleteSessionLocked(s)
		b.authErr.Add(1)
		return nil
	}
	kuid := b.kuid()
	ul := []byte{s.role, byte(len(s.uname))}
	want := rakpHMAC(s.cs.auth, kuid, s.rc[:], le32(s.remoteID), ul, s.uname)
	if !hmac.Equal(want, d[8:]) {
		b.deleteSessionLocked(s)
		b.authErr.Add(1)
		return fail(rmcpInvalidIntegrityVal, s.remoteID)
	}
	// No BMC key (K_G) is set, so K_G is the user key.
	sik := rakpHMAC(s.cs.auth, kuid, s.rm[:], s.rc[:], ul, s.uname)
	s.cs.deriveKeys(sik)
	guid := b.opts.GUID
	icv := rakpHMAC(s.cs.auth, sik, s.rm[:], le32(s.id), guid[:])
	icv = icv[:rakpICVLen(s.cs.auth)]
	s.state = stateActive
	s.lastUsed = time.Now()
	s.priv = min(privUser, s.maxPriv)
	s.outSeq = 1
	s.inSeq = 0 // the console's numbers start at 1
	b.opened.Add(1)
	r := append([]byte{tag, rmcpOK, 0, 0}, le32(s.remoteID)...)
	r = append(r, icv...)
	return buildV20(payloadRAKP4, 0, 0, r, nil)
}
