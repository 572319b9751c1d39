package ipmisim

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// errNoAnswer: nothing answered the probe in time (not up yet, or gone).
var errNoAnswer = errors.New("no answer")

// errForeignReply: something answered, but not with a Get System GUID reply.
var errForeignReply = errors.New("unexpected reply")

var probeSeq atomic.Uint32

// getSystemGUIDRequest builds an IPMI 1.5 LAN packet, outside any session,
// asking the BMC at 0x20 for Get System GUID (NetFn App, cmd 0x37). ipmi_sim
// answers it before authentication, with the guid from lan.conf, which is
// unique per BMC here: an answer proves which process owns the port.
func getSystemGUIDRequest(seq byte) []byte {
	hdr := []byte{0x20, 0x06 << 2} // rsAddr, NetFn App / LUN 0
	hdr = append(hdr, checksum(hdr))
	body := []byte{0x81, seq << 2, 0x37} // rqAddr (remote console), rqSeq, cmd
	body = append(body, checksum(body))
	msg := append(hdr, body...)
	pkt := []byte{
		0x06, 0x00, 0xff, 0x07, // RMCP v1.0, no ACK, class IPMI
		0x00,       // auth type none
		0, 0, 0, 0, // session sequence
		0, 0, 0, 0, // session id
		byte(len(msg)),
	}
	return append(pkt, msg...)
}

func checksum(b []byte) byte {
	var s byte
	for _, x := range b {
		s += x
	}
	return -s
}

// parseGUIDResponse extracts the GUID from a Get System GUID response to
// the request with sequence seq.
func parseGUIDResponse(p []byte, seq byte) ([16]byte, error) {
	var guid [16]byte
	if len(p) < 14 || !bytes.Equal(p[:4], []byte{0x06, 0x00, 0xff, 0x07}) {
		return guid, fmt.Errorf("not an RMCP/IPMI packet: % x", p)
	}
	if p[4] != 0 {
		return guid, fmt.Errorf("unexpected auth type %d in reply", p[4])
	}
	n := int(p[13])
	msg := p[14:]
	if n > len(msg) {
		return guid, fmt.Errorf("short reply: % x", p)
	}
	msg = msg[:n]
	// rqAddr, NetFn|LUN, cks, rsAddr, rqSeq|LUN, cmd, cc, guid[16], cks
	if len(msg) < 8 || msg[1]>>2 != 0x07 || msg[5] != 0x37 || msg[4]>>2 != seq&0x3f {
		return guid, fmt.Errorf("not a Get System GUID reply to seq %d: % x", seq&0x3f, msg)
	}
	if msg[6] != 0 {
		return guid, fmt.Errorf("the Get System GUID command failed: completion code %#02x", msg[6])
	}
	if len(msg) < 7+16+1 {
		return guid, fmt.Errorf("short Get System GUID reply: % x", msg)
	}
	copy(guid[:], msg[7:7+16])
	return guid, nil
}

// probeGUID asks addr:port for its system GUID and waits up to timeout.
func probeGUID(addr string, port int, timeout time.Duration) ([16]byte, error) {
	var zero [16]byte
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(addr), Port: port})
	if err != nil {
		return zero, err
	}
	defer c.Close()
	seq := byte(probeSeq.Add(1)) & 0x3f
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return zero, err
	}
	if _, err := c.Write(getSystemGUIDRequest(seq)); err != nil {
		return zero, errNoAnswer
	}
	buf := make([]byte, 512)
	var bad error
	for {
		n, err := c.Read(buf)
		if err != nil {
			// Timeout, or ECONNREFUSED from an ICMP port unreachable.
			if bad != nil {
				return zero, fmt.Errorf("%w: %v", errForeignReply, bad)
			}
			return zero, errNoAnswer
		}
		guid, err := parseGUIDResponse(buf[:n], seq)
		if err != nil {
			bad = err // stale or foreign; keep waiting for ours
			continue
		}
		return guid, nil
	}
}
