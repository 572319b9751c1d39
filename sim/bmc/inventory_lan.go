package bmc

import (
	"net"
)

// getLANConfig answers Get LAN Configuration Parameters (section 23.2)
// for the LAN channel, read-only: the BMC's address (the loopback it
// answers on), a MAC derived from its GUID, the authentication types it
// takes and the cipher suites' privilege levels. Parameters it does not
// keep answer "parameter not supported", which ipmitool skips.
func (b *BMC) getLANConfig(_ *session, d []byte) (byte, []byte) {
	if len(d) < 4 {
		return ccReqDataLen, nil
	}
	if ch := d[0] & 0x0f; ch != lanChannel && ch != 0x0e {
		return ccInvalidData, nil
	}
	if d[0]&0x80 != 0 { // revision only
		return ccOK, []byte{0x11}
	}
	v, ok := b.lanParam(d[1])
	if !ok {
		return ccParamNotSupp, nil
	}
	return ccOK, append([]byte{0x11}, v...)
}

func (b *BMC) lanParam(p byte) ([]byte, bool) {
	ip := net.IPv4(127, 0, 0, 1).To4()
	if a, ok := b.conn.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() != nil {
		ip = a.IP.To4()
	}
	g := b.opts.GUID
	switch p {
	case 0: // set in progress: set complete
		return []byte{0x00}, true
	case 1: // authentication type support: none (when allowed), MD2, MD5, password
		return []byte{0x16 | b.noneAuth()}, true
	case 2: // authentication type enables, per privilege level
		a := 0x16 | b.noneAuth()
		return []byte{a, a, a, a, 0x00}, true
	case 3: // IP address
		return ip, true
	case 4: // IP address source: static
		return []byte{0x01}, true
	case 5: // MAC address: locally administered, from the GUID
		return []byte{0x02, g[11], g[12], g[13], g[14], g[15]}, true
	case 6: // subnet mask
		return []byte{255, 0, 0, 0}, true
	case 12: // default gateway
		return []byte{0, 0, 0, 0}, true
	case 13, 15: // default and backup gateway MAC: none (loopback)
		return make([]byte, 6), true
	case 14: // backup gateway
		return []byte{0, 0, 0, 0}, true
	case 20: // 802.1q VLAN ID: disabled
		return []byte{0x00, 0x00}, true
	case 50: // IPv6/IPv4 support: no IPv6
		return []byte{0x00}, true
	case 51: // IPv6/IPv4 addressing enables: IPv4 only
		return []byte{0x00}, true
	case 55: // IPv6 status: no static or dynamic IPv6 addresses (FreeIPMI's ipmi-config asks)
		return []byte{0x00, 0x00, 0x00}, true
	}
	return b.lanParamMore(p)
}

// lanParamMore answers the LAN parameters FreeIPMI's ipmi-config reads
// besides the addresses: ARP control, the RMCP+ cipher suites and their
// privilege limits, the bad password threshold.
func (b *BMC) lanParamMore(p byte) ([]byte, bool) {
	suites := b.suites()
	switch p {
	case 10: // BMC-generated ARP control: none (the BMC answers on loopback)
		return []byte{0x00}, true
	case 11: // gratuitous ARP interval: 2 s (unused)
		return []byte{0x04}, true
	case 22: // cipher suite entry count
		return []byte{byte(len(suites))}, true
	case 23: // cipher suite IDs
		ids := []byte{0x00}
		for _, c := range suites {
			ids = append(ids, c.id)
		}
		return ids, true
	case 24: // maximum privilege per cipher suite entry, two 4-bit entries a byte: administrator
		v := make([]byte, 9)
		for i := range suites {
			v[1+i/2] |= privAdmin << (4 * (i % 2))
		}
		return v, true
	case 26: // bad password threshold: disabled
		return make([]byte, 6), true
	}
	return lanParamIPv6Router(p)
}

// lanParamIPv6Router answers the IPv6 router parameters (64-72) as a BMC
// without IPv6 does: neither static nor dynamic router configuration, the
// two static routers' addresses, MACs and prefixes all zero.
func lanParamIPv6Router(p byte) ([]byte, bool) {
	sizes := map[byte]int{64: 1, 65: 16, 66: 6, 67: 1, 68: 16, 69: 16, 70: 6, 71: 1, 72: 16}
	n, ok := sizes[p]
	if !ok {
		return nil, false
	}
	return make([]byte, n), true
}

func (b *BMC) noneAuth() byte {
	if b.opts.AllowCipherZero {
		return 0x01
	}
	return 0x00
}

// getSOLConfig answers Get SOL Configuration Parameters (section 26.3):
// SOL enabled on this channel at 115200 bit/s, served on the session's
// UDP port (sol.go serves the activation), when the BMC has a serial port.
func (b *BMC) getSOLConfig(_ *session, d []byte) (byte, []byte) {
	if len(d) < 4 {
		return ccReqDataLen, nil
	}
	if d[0]&0x80 != 0 {
		return ccOK, []byte{0x11}
	}
	port := 623
	if a, ok := b.conn.LocalAddr().(*net.UDPAddr); ok {
		port = a.Port
	}
	enabled := byte(0)
	if b.opts.Serial != nil {
		enabled = 1
	}
	params := map[byte][]byte{
		0: {0x00},            // set in progress: set complete
		1: {enabled},         // SOL enabled
		2: {0x40 | privUser}, // encryption forced off, authentication on, user level
		3: {0x0c, 0x60},      // character accumulate 60 ms, send threshold 96 characters
		4: {0x07, 0x32},      // 7 retries, 500 ms apart
		5: {0x0a},            // non-volatile bit rate: 115200
		6: {0x0a},            // volatile bit rate: 115200
		7: {lanChannel},      // payload channel
		8: le16(port),        // payload port
	}
	v, ok := params[d[1]]
	if !ok {
		return ccParamNotSupp, nil
	}
	return ccOK, append([]byte{0x11}, v...)
}
