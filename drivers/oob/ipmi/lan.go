package ipmi

import (
	"crypto/md5"
	"crypto/subtle"
	"encoding/binary"
	"errors"

	"github.com/slipway-dev/slipway/drivers"
	goipmi "github.com/vmware/goipmi"
)

// A native IPMI v1.5 LAN session (IPMI v2.0 sections 13.6, 22.13-22.19)
// with MD5 authentication, built on goipmi's message types. goipmi's own
// "lan" client would do, but it has a fixed 5 s timeout, no context, no
// retransmission and always asks for administrator privilege; this one
// shares the retransmission and context handling of the RMCP+ client.

// v15Session is an active IPMI v1.5 session.
type v15Session struct {
	l        *link
	user     string
	priv     byte
	password [16]byte // NUL padded
	sid      uint32
	outSeq   uint32 // session sequence number of the next packet sent
	rqSeq    byte
	active   bool
}

// openV15 runs Get Channel Authentication Capabilities, Get Session
// Challenge, Activate Session and Set Session Privilege Level.
func openV15(l *link, user string, password []byte, priv byte) (*v15Session, error) {
	s := &v15Session{l: l, user: user, priv: priv}
	copy(s.password[:], password)
	if err := s.offersMD5(); err != nil {
		return nil, err
	}
	ch, err := s.challenge()
	if err != nil {
		return nil, err
	}
	if err := s.activate(ch); err != nil {
		return nil, err
	}
	if err := setPrivilege(s, s.priv); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// offersMD5 asks the BMC's authentication capabilities: it must offer MD5
// over IPMI 1.5.
func (s *v15Session) offersMD5() error {
	caps := &goipmi.AuthCapabilitiesResponse{}
	if err := s.preSession(request{netFn: goipmi.NetworkFunctionApp, cmd: goipmi.CommandGetAuthCapabilities,
		data: encode(goipmi.AuthCapabilitiesRequest{ChannelNumber: 0x0e, PrivLevel: s.priv}),
		name: "Get Channel Authentication Capabilities"}, caps); err != nil {
		return err
	}
	if caps.AuthTypeSupport&(1<<authMD5) == 0 {
		return drivers.Errorf(drivers.Permanent,
			"BMC %s does not offer MD5 authentication over IPMI 1.5 (offered: %s): use protocol lanplus",
			s.l.target, authTypes(caps.AuthTypeSupport))
	}
	return nil
}

// challenge gets the session challenge for the user; an unknown user is
// a credentials error.
func (s *v15Session) challenge() (*goipmi.SessionChallengeResponse, error) {
	chReq := goipmi.SessionChallengeRequest{AuthType: authMD5}
	copy(chReq.Username[:], s.user)
	ch := &goipmi.SessionChallengeResponse{}
	err := s.preSession(request{netFn: goipmi.NetworkFunctionApp, cmd: goipmi.CommandGetSessionChallenge,
		data: encode(chReq), name: "Get Session Challenge"}, ch)
	var cc goipmi.CompletionCode
	if errors.As(err, &cc) && (cc == 0x81 || cc == 0x82) { // invalid or null user name
		return nil, credentialsError(s.l.target, s.user)
	}
	if err != nil {
		return nil, err
	}
	return ch, nil
}

// activate sends Activate Session, the first message authenticated with
// the password, and takes the session ID and sequence number it answers.
func (s *v15Session) activate(ch *goipmi.SessionChallengeResponse) error {
	l := s.l
	s.sid = ch.TemporarySessionID
	act := goipmi.ActivateSessionRequest{AuthType: authMD5, PrivLevel: s.priv, AuthCode: ch.Challenge}
	for binary.LittleEndian.Uint32(act.InSeq[:]) == 0 {
		copy(act.InSeq[:], random(4))
	}
	r := request{netFn: goipmi.NetworkFunctionApp, cmd: goipmi.CommandActivateSession, data: encode(act), name: "Activate Session"}
	s.rqSeq = (s.rqSeq + 1) & 0x3f
	rqSeq := s.rqSeq
	var p reply
	err := l.exchange(r.name, func(int) []byte { return s.packet(authMD5, 0, r.message(rqSeq)) },
		func(pkt []byte) (bool, error) {
			m, ok := s.open(pkt, false)
			if !ok {
				return false, nil
			}
			p, ok = parseReply(m)
			return ok && p.answers(r, rqSeq), nil
		})
	var nr *noReplyError
	if errors.As(err, &nr) && !nr.refused {
		// The BMC answered the challenge a moment ago and now stays silent:
		// a v1.5 BMC drops a message whose auth code does not verify, so
		// this is the answer to a wrong password (or the BMC went away
		// exactly now, which the caller can't tell from it).
		return credentialsError(l.target, s.user)
	}
	if err != nil {
		return err
	}
	res := &goipmi.ActivateSessionResponse{}
	switch {
	case p.cc == 0x81 || p.cc == 0x82 || p.cc == 0x83:
		return drivers.Errorf(drivers.Transient, "BMC %s has no free session: Activate Session: %s", l.target, ccError(p.cc))
	case p.cc == 0x86:
		return privilegeError(l.target, s.user, s.priv, "Activate Session: "+ccError(p.cc))
	case p.cc != goipmi.CommandCompleted:
		return drivers.Errorf(drivers.Permanent, "BMC %s: Activate Session: %s", l.target, ccError(p.cc))
	case decode(p, res) != nil:
		return drivers.Errorf(drivers.Transient, "BMC %s: short Activate Session response", l.target)
	}
	s.sid = res.SessionID
	s.outSeq = res.InboundSeq
	s.active = true
	return nil
}

// preSession sends a session-less request (auth type none) and decodes
// the response into res; a completion code other than success is
// returned as a goipmi.CompletionCode error (unclassified: the caller
// decides).
func (s *v15Session) preSession(r request, res goipmi.Response) error {
	s.rqSeq = (s.rqSeq + 1) & 0x3f
	rqSeq := s.rqSeq
	var p reply
	err := s.l.exchange(r.name, func(int) []byte { return s.packet(authNone, 0, r.message(rqSeq)) },
		func(pkt []byte) (bool, error) {
			m, ok := s.open(pkt, true)
			if !ok {
				return false, nil
			}
			p, ok = parseReply(m)
			return ok && p.answers(r, rqSeq), nil
		})
	if err != nil {
		return err
	}
	if p.cc != goipmi.CommandCompleted {
		if p.cc == 0x81 || p.cc == 0x82 {
			return p.cc
		}
		return drivers.Errorf(drivers.Permanent, "BMC %s: %s: %s", s.l.target, r.name, ccError(p.cc))
	}
	if err := decode(p, res); err != nil {
		return drivers.Errorf(drivers.Transient, "BMC %s: short %s response", s.l.target, r.name)
	}
	return nil
}

// packet frames an IPMI message in a v1.5 session packet.
func (s *v15Session) packet(authType byte, seq uint32, msg []byte) []byte {
	sid := s.sid
	if authType == authNone {
		sid = 0
	}
	p := append(rmcpHeader(), authType)
	p = binary.LittleEndian.AppendUint32(p, seq)
	p = binary.LittleEndian.AppendUint32(p, sid)
	if authType == authMD5 {
		p = append(p, s.authCode(sid, seq, msg)...)
	}
	p = append(p, byte(len(msg)))
	return append(p, msg...)
}

// authCode is the MD5 auth code (IPMI v2.0 section 22.17.1).
func (s *v15Session) authCode(sid, seq uint32, msg []byte) []byte {
	h := md5.New()
	h.Write(s.password[:])
	h.Write(le32(sid))
	h.Write(msg)
	h.Write(le32(seq))
	h.Write(s.password[:])
	return h.Sum(nil)
}

// open returns the IPMI message of a v1.5 packet whose auth code verifies
// (or, outside a session, that carries none).
func (s *v15Session) open(pkt []byte, preSession bool) ([]byte, bool) {
	const hdr = rmcpHeaderLen + 9
	if len(pkt) < hdr+1 || pkt[0] != rmcpVersion || pkt[3] != rmcpClassIPMI {
		return nil, false
	}
	at := pkt[4]
	seq := binary.LittleEndian.Uint32(pkt[5:9])
	sid := binary.LittleEndian.Uint32(pkt[9:13])
	off := hdr
	var code []byte
	switch {
	case at == authNone:
		// Outside a session; inside one only when the BMC has turned
		// per-message authentication off.
	case at == authMD5 && !preSession:
		if len(pkt) < off+16+1 {
			return nil, false
		}
		code = pkt[off : off+16]
		off += 16
	default:
		return nil, false
	}
	n := int(pkt[off])
	off++
	if len(pkt) < off+n {
		return nil, false
	}
	msg := pkt[off : off+n]
	if preSession {
		return msg, sid == 0
	}
	if s.active && sid != s.sid {
		// (Before activation the auth code alone vouches for the packet:
		// a BMC may answer Activate Session under either session ID.)
		return nil, false
	}
	if code != nil && subtle.ConstantTimeCompare(code, s.authCode(sid, seq, msg)) != 1 {
		return nil, false
	}
	return msg, true
}

// do sends an IPMI request in the session and returns its response.
func (s *v15Session) do(r request) (reply, error) {
	s.rqSeq = (s.rqSeq + 1) & 0x3f
	rqSeq := s.rqSeq
	msg := r.message(rqSeq)
	var out reply
	err := s.l.exchange(r.name, func(int) []byte {
		seq := s.outSeq
		s.outSeq++
		if s.outSeq == 0 {
			s.outSeq = 1
		}
		return s.packet(authMD5, seq, msg)
	}, acceptReply(func(pkt []byte) ([]byte, bool) { return s.open(pkt, false) }, r, rqSeq, &out))
	return out, err
}

func (s *v15Session) close() {
	if !s.active {
		return
	}
	s.active = false
	r := request{netFn: goipmi.NetworkFunctionApp, cmd: goipmi.CommandCloseSession,
		data: encode(goipmi.CloseSessionRequest{SessionID: s.sid}), name: "Close Session"}
	closeSession(s.l, func() {
		s.rqSeq = (s.rqSeq + 1) & 0x3f
		seq := s.outSeq
		s.outSeq++
		s.l.send(s.packet(authMD5, seq, r.message(s.rqSeq)))
	}, func() { _, _ = s.do(r) })
	clear(s.password[:])
}

func (s *v15Session) systemGUID() [16]byte { return [16]byte{} }

// authTypes names the v1.5 authentication types of a capabilities mask.
func authTypes(mask uint8) string {
	out := ""
	for _, t := range []struct {
		bit  uint
		name string
	}{{0, "none"}, {1, "MD2"}, {2, "MD5"}, {4, "straight password"}, {5, "OEM"}} {
		if mask&(1<<t.bit) != 0 {
			if out != "" {
				out += ", "
			}
			out += t.name
		}
	}
	if out == "" {
		return "nothing"
	}
	return out
}
