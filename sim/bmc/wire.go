package bmc

import (
	"crypto/md5"
	"crypto/subtle"
	"encoding/binary"
	"errors"
)

// RMCP (DMTF ASF 2.0 section 3.2.2; IPMI v2.0 section 13.1.3).
const (
	rmcpVersion   = 0x06
	rmcpNoAckSeq  = 0xff
	rmcpClassASF  = 0x06
	rmcpClassIPMI = 0x07
	rmcpHeaderLen = 4

	asfIANA     = 4542 // 0x000011BE
	asfPing     = 0x80
	asfPong     = 0x40
	asfHeaderLn = 8
)

// IPMI v1.5 session authentication types (IPMI v2.0 section 13.6); 0x06 in
// the same byte announces an IPMI v2.0 / RMCP+ session header.
const (
	authNone     = 0x00
	authMD2      = 0x01
	authMD5      = 0x02
	authPassword = 0x04
	authRMCPPlus = 0x06
)

// RMCP+ payload types (IPMI v2.0 table 13-16).
const (
	payloadIPMI        = 0x00
	payloadOEM         = 0x02
	payloadOpenSessReq = 0x10
	payloadOpenSessRsp = 0x11
	payloadRAKP1       = 0x12
	payloadRAKP2       = 0x13
	payloadRAKP3       = 0x14
	payloadRAKP4       = 0x15
)

// Addresses and sizes of the IPMI LAN message (IPMI v2.0 section 13.8).
const (
	bmcSlaveAddr  = 0x20
	ipmiMsgMinLen = 7 // rsAddr netFn/LUN chk1 rqAddr rqSeq/LUN cmd chk2
	v15HeaderLen  = 1 + 4 + 4
	v20HeaderLen  = 1 + 1 + 4 + 4 + 2
)

var errMalformed = errors.New("malformed packet")

// ipmiChecksum is the IPMI 2's complement checksum: the value that makes the
// byte sum of b plus the checksum zero.
func ipmiChecksum(b []byte) byte {
	var c byte
	for _, x := range b {
		c += x
	}
	return -c
}

// ipmiRequest is a parsed IPMI LAN request message.
type ipmiRequest struct {
	rsAddr byte
	netFn  byte
	rsLUN  byte
	rqAddr byte
	rqSeq  byte
	rqLUN  byte
	cmd    byte
	data   []byte
}

func parseIPMIRequest(b []byte) (*ipmiRequest, error) {
	if len(b) < ipmiMsgMinLen {
		return nil, errMalformed
	}
	if ipmiChecksum(b[:2]) != b[2] || ipmiChecksum(b[3:len(b)-1]) != b[len(b)-1] {
		return nil, errMalformed
	}
	return &ipmiRequest{
		rsAddr: b[0],
		netFn:  b[1] >> 2,
		rsLUN:  b[1] & 3,
		rqAddr: b[3],
		rqSeq:  b[4] >> 2,
		rqLUN:  b[4] & 3,
		cmd:    b[5],
		data:   append([]byte(nil), b[6:len(b)-1]...),
	}, nil
}

// response builds the IPMI LAN response message to r.
func (r *ipmiRequest) response(cc byte, data []byte) []byte {
	m := make([]byte, 0, ipmiMsgMinLen+1+len(data))
	m = append(m, r.rqAddr, (r.netFn|1)<<2|r.rqLUN)
	m = append(m, ipmiChecksum(m[:2]))
	m = append(m, r.rsAddr, r.rqSeq<<2|r.rsLUN, r.cmd, cc)
	m = append(m, data...)
	return append(m, ipmiChecksum(m[3:]))
}

// key identifies a request for duplicate (retransmission) detection.
func (r *ipmiRequest) key() string {
	k := []byte{r.netFn, r.cmd, r.rqSeq, r.rqLUN, r.rqAddr}
	return string(append(k, r.data...))
}

func rmcpHeader(class byte) []byte {
	return []byte{rmcpVersion, 0, rmcpNoAckSeq, class}
}

// asfPongFor answers an ASF Presence Ping (DMTF ASF 2.0 section 3.2.4.3):
// the pong says IPMI is supported (entity bit 7) and ASF 1.0.
func asfPongFor(ping []byte) []byte {
	p := rmcpHeader(rmcpClassASF)
	p = binary.BigEndian.AppendUint32(p, asfIANA)
	p = append(p, asfPong, ping[rmcpHeaderLen+5], 0, 16)
	p = binary.BigEndian.AppendUint32(p, asfIANA)
	p = binary.BigEndian.AppendUint32(p, 0) // OEM-defined
	p = append(p, 0x81, 0x00)               // supported entities, interactions
	return append(p, make([]byte, 6)...)
}

// v15Packet is a parsed IPMI v1.5 session packet.
type v15Packet struct {
	authType byte
	seq      uint32
	sid      uint32
	authCode []byte // nil when authType is none
	msg      []byte // IPMI message, rsAddr through the data checksum
}

func parseV15(b []byte) (*v15Packet, error) {
	if len(b) < rmcpHeaderLen {
		return nil, errMalformed
	}
	b = b[rmcpHeaderLen:]
	if len(b) < v15HeaderLen+1 {
		return nil, errMalformed
	}
	p := &v15Packet{
		authType: b[0],
		seq:      binary.LittleEndian.Uint32(b[1:5]),
		sid:      binary.LittleEndian.Uint32(b[5:9]),
	}
	off := v15HeaderLen
	if p.authType != authNone {
		if len(b) < off+16+1 {
			return nil, errMalformed
		}
		p.authCode = b[off : off+16]
		off += 16
	}
	n := int(b[off])
	off++
	if len(b) < off+n { // a trailing legacy pad byte is allowed
		return nil, errMalformed
	}
	p.msg = b[off : off+n]
	return p, nil
}

// pad16 returns the IPMI v1.5 form of a password: 16 bytes, NUL padded.
func pad16(s string) []byte {
	b := make([]byte, 16)
	copy(b, s)
	return b
}

// v15AuthCode computes the IPMI v1.5 session auth code (IPMI v2.0 section
// 22.17.1): for MD2/MD5 the digest of password, session ID, message, session
// sequence number and password again; for "straight password" the password.
func v15AuthCode(authType byte, password []byte, sid, seq uint32, msg []byte) []byte {
	var le [8]byte
	binary.LittleEndian.PutUint32(le[:4], sid)
	binary.LittleEndian.PutUint32(le[4:], seq)
	switch authType {
	case authMD5:
		h := md5.New()
		h.Write(password)
		h.Write(le[:4])
		h.Write(msg)
		h.Write(le[4:])
		h.Write(password)
		return h.Sum(nil)
	case authMD2:
		s := md2Sum(password, le[:4], msg, le[4:], password)
		return s[:]
	case authPassword:
		return append([]byte(nil), password...)
	}
	return nil
}

func v15AuthOK(p *v15Packet, password []byte) bool {
	if p.authType == authNone {
		return true
	}
	want := v15AuthCode(p.authType, password, p.sid, p.seq, p.msg)
	return want != nil && subtle.ConstantTimeCompare(want, p.authCode) == 1
}

// buildV15 frames an IPMI message in an IPMI v1.5 session packet.
func buildV15(authType byte, password []byte, sid, seq uint32, msg []byte) []byte {
	p := rmcpHeader(rmcpClassIPMI)
	p = append(p, authType)
	p = binary.LittleEndian.AppendUint32(p, seq)
	p = binary.LittleEndian.AppendUint32(p, sid)
	if authType != authNone {
		p = append(p, v15AuthCode(authType, password, sid, seq, msg)...)
	}
	p = append(p, byte(len(msg)))
	return append(p, msg...)
}

// v20Packet is a parsed IPMI v2.0 (RMCP+) session packet. The payload is
// still encrypted, and the trailer unchecked, when parse returns.
type v20Packet struct {
	encrypted     bool
	authenticated bool
	payloadType   byte
	sid           uint32
	seq           uint32
	payload       []byte
	raw           []byte // whole datagram
	payloadEnd    int    // offset of the session trailer in raw
}

func parseV20(b []byte) (*v20Packet, error) {
	if len(b) < rmcpHeaderLen {
		return nil, errMalformed
	}
	h := b[rmcpHeaderLen:]
	if len(h) < v20HeaderLen {
		return nil, errMalformed
	}
	p := &v20Packet{
		encrypted:     h[1]&0x80 != 0,
		authenticated: h[1]&0x40 != 0,
		payloadType:   h[1] & 0x3f,
		raw:           b,
	}
	if p.payloadType == payloadOEM {
		return nil, errMalformed // OEM explicit payloads are not supported
	}
	p.sid = binary.LittleEndian.Uint32(h[2:6])
	p.seq = binary.LittleEndian.Uint32(h[6:10])
	n := int(binary.LittleEndian.Uint16(h[10:12]))
	start := rmcpHeaderLen + v20HeaderLen
	if len(b) < start+n {
		return nil, errMalformed
	}
	p.payload = b[start : start+n]
	p.payloadEnd = start + n
	return p, nil
}

// buildV20 frames a payload in an IPMI v2.0 session packet. With a non-nil
// suite the payload is encrypted and/or authenticated as the suite says.
func buildV20(payloadType byte, sid, seq uint32, payload []byte, cs *cipherState) []byte {
	pt := payloadType
	if cs != nil && cs.conf != confNone {
		pt |= 0x80
		payload = cs.encrypt(payload)
	}
	if cs != nil && cs.integ != integNone {
		pt |= 0x40
	}
	p := rmcpHeader(rmcpClassIPMI)
	p = append(p, authRMCPPlus, pt)
	p = binary.LittleEndian.AppendUint32(p, sid)
	p = binary.LittleEndian.AppendUint32(p, seq)
	p = binary.LittleEndian.AppendUint16(p, uint16(len(payload)))
	p = append(p, payload...)
	if cs != nil && cs.integ != integNone {
		// Integrity pad: from the auth type byte through the next header
		// byte the packet is a multiple of 4 bytes long.
		n := (4 - (len(p)-rmcpHeaderLen+2)%4) % 4
		for i := 0; i < n; i++ {
			p = append(p, 0xff)
		}
		p = append(p, byte(n), rmcpClassIPMI) // pad length, next header
		p = append(p, cs.integrityMAC(p[rmcpHeaderLen:])...)
	}
	return p
}
