package ipmi

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"

	goipmi "github.com/vmware/goipmi"
)

// RMCP framing (DMTF ASF 2.0 section 3.2.2; IPMI v2.0 section 13.1.3).
const (
	rmcpVersion   = 0x06
	rmcpNoAck     = 0xff
	rmcpClassIPMI = 0x07
	rmcpHeaderLen = 4
)

// Session header authentication types (IPMI v2.0 section 13.6); 0x06
// announces an IPMI v2.0 / RMCP+ session header.
const (
	authNone     = goipmi.AuthTypeNone
	authMD5      = goipmi.AuthTypeMD5
	authRMCPPlus = 0x06
)

// IPMB addresses of the LAN message (IPMI v2.0 section 13.8).
const (
	bmcSlaveAddr = 0x20 // the BMC
	remoteSWID   = 0x81 // the remote console software ID ipmitool uses too
)

// Commands goipmi does not name.
const (
	cmdGetSystemGUID = goipmi.Command(0x37)
)

func rmcpHeader() []byte { return []byte{rmcpVersion, 0, rmcpNoAck, rmcpClassIPMI} }

// checksum is the IPMI 2's complement checksum of b.
func checksum(b []byte) byte {
	var c byte
	for _, x := range b {
		c += x
	}
	return -c
}

// request is an IPMI command to the BMC.
type request struct {
	netFn goipmi.NetworkFunction
	cmd   goipmi.Command
	data  []byte
	name  string // for messages: "Get Chassis Status"
}

// message builds the IPMI LAN request message (rsAddr through the data
// checksum) carrying r with the 6-bit request sequence number rqSeq.
func (r request) message(rqSeq byte) []byte {
	m := []byte{bmcSlaveAddr, byte(r.netFn) << 2}
	m = append(m, checksum(m))
	m = append(m, remoteSWID, rqSeq<<2, byte(r.cmd))
	m = append(m, r.data...)
	return append(m, checksum(m[3:]))
}

// reply is a parsed IPMI LAN response message.
type reply struct {
	netFn goipmi.NetworkFunction
	cmd   goipmi.Command
	rqSeq byte
	cc    goipmi.CompletionCode
	data  []byte // after the completion code
}

// parseReply parses a response message; ok is false for anything that is
// not a well-formed response addressed to the remote console.
func parseReply(m []byte) (reply, bool) {
	// rqAddr netFn/LUN chk1 rsAddr rqSeq/LUN cmd cc [data] chk2
	if len(m) < 8 || checksum(m[:2]) != m[2] || checksum(m[3:len(m)-1]) != m[len(m)-1] {
		return reply{}, false
	}
	if m[0] != remoteSWID || m[1]>>2&1 == 0 { // response netFns are odd
		return reply{}, false
	}
	return reply{
		netFn: goipmi.NetworkFunction(m[1] >> 2),
		cmd:   goipmi.Command(m[5]),
		rqSeq: m[4] >> 2,
		cc:    goipmi.CompletionCode(m[6]),
		data:  append([]byte(nil), m[7:len(m)-1]...),
	}, true
}

// answers reports whether p is the response to request r sent with rqSeq.
func (p reply) answers(r request, rqSeq byte) bool {
	return p.netFn == r.netFn+1 && p.cmd == r.cmd && p.rqSeq == rqSeq
}

// encode marshals one of goipmi's request structs as the IPMI message data.
func encode(v any) []byte {
	if m, ok := v.(encoding.BinaryMarshaler); ok {
		b, err := m.MarshalBinary()
		if err != nil {
			panic(err) // goipmi's marshalers do not fail
		}
		return b
	}
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, v); err != nil {
		panic(err) // fixed-size structs only
	}
	return buf.Bytes()
}

// decode unmarshals a response into one of goipmi's response structs,
// which start with the completion code.
func decode(p reply, v any) error {
	b := append([]byte{byte(p.cc)}, p.data...)
	if u, ok := v.(encoding.BinaryUnmarshaler); ok {
		return u.UnmarshalBinary(b)
	}
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, v); err != nil {
		return errors.New("short response")
	}
	return nil
}

// ccError describes a completion code other than success.
func ccError(cc goipmi.CompletionCode) string {
	return fmt.Sprintf("completion code 0x%02x (%s)", byte(cc), cc.Error())
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// acceptReply returns the packet filter of a session's exchange: it opens
// a datagram with the session's keys and accepts the response to r (with
// sequence rqSeq) into out, ignoring anything else.
func acceptReply(open func([]byte) ([]byte, bool), r request, rqSeq byte, out *reply) func([]byte) (bool, error) {
	return func(pkt []byte) (bool, error) {
		m, ok := open(pkt)
		if !ok {
			return false, nil
		}
		p, ok := parseReply(m)
		if !ok || !p.answers(r, rqSeq) {
			return false, nil
		}
		*out = p
		return true, nil
	}
}
