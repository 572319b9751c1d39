package bmc

import (
	"encoding/binary"
	"sort"
)

// Commands FreeIPMI's ipmiconsole and ipmitool's `session info` send
// besides those of inventory.go and sol.go.
const (
	cmdGetSessionInfo         = 0x3d // App
	cmdGetChannelPayloadSupp  = 0x4e // App
	cmdGetChannelPayloadVers  = 0x4f // App
	cmdGetUserPayloadAccess   = 0x4d // App
	cmdSetChannelSecurityKeys = 0x56 // App
	payloadSessionSetupBitsLo = 0x3f // payload types 0x10-0x15: RMCP+ Open Session and RAKP 1-4
)

var sessionCommands = map[[2]byte]struct {
	info cmdInfo
	run  handler
}{
	{netFnApp, cmdGetSessionInfo}:         {cmdInfo{"Get Session Info", privUser}, (*BMC).getSessionInfo},
	{netFnApp, cmdGetChannelPayloadSupp}:  {cmdInfo{"Get Channel Payload Support", privUser}, (*BMC).getChannelPayloadSupport},
	{netFnApp, cmdGetChannelPayloadVers}:  {cmdInfo{"Get Channel Payload Version", privUser}, (*BMC).getChannelPayloadVersion},
	{netFnApp, cmdGetUserPayloadAccess}:   {cmdInfo{"Get User Payload Access", privOperator}, (*BMC).getUserPayloadAccess},
	{netFnApp, cmdSetChannelSecurityKeys}: {cmdInfo{"Set Channel Security Keys", privAdmin}, (*BMC).channelSecurityKeys},
}

func init() {
	for k, c := range sessionCommands {
		inventoryCommands[k] = c
		commandTable[k] = c.info
	}
}

// getChannelPayloadSupport answers Get Channel Payload Support (IPMI v2.0
// section 24.8) for the LAN channel: IPMI messages and SOL, and the RMCP+
// session setup payloads; no OEM payloads.
func (b *BMC) getChannelPayloadSupport(_ *session, d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccReqDataLen, nil
	}
	if ch := d[0] & 0x0f; ch != lanChannel && ch != 0x0e {
		return ccInvalidData, nil
	}
	std := byte(1 << payloadIPMI)
	if b.opts.Serial != nil {
		std |= 1 << payloadSOL
	}
	return ccOK, []byte{std, 0x00, payloadSessionSetupBitsLo, 0x00, 0, 0, 0, 0}
}

// getChannelPayloadVersion answers Get Channel Payload Version (section
// 24.9): version 1.0 of each payload the channel carries.
func (b *BMC) getChannelPayloadVersion(_ *session, d []byte) (byte, []byte) {
	if len(d) < 2 {
		return ccReqDataLen, nil
	}
	if ch := d[0] & 0x0f; ch != lanChannel && ch != 0x0e {
		return ccInvalidData, nil
	}
	switch d[1] {
	case payloadIPMI, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15:
	case payloadSOL:
		if b.opts.Serial == nil {
			return 0x80, nil // payload type not available on the channel
		}
	default:
		return 0x80, nil
	}
	return ccOK, []byte{0x10}
}

// getSessionInfo answers Get Session Info (section 22.20): index 0 is the
// asking session, 1-63 the Nth active session, 0xfe one by handle, 0xff
// one by session ID. A session that does not exist gets "invalid data".
func (b *BMC) getSessionInfo(s *session, d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccReqDataLen, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	active := b.activeSessionsLocked()
	var t *session
	switch idx := d[0]; {
	case idx == 0:
		t = s
	case idx == 0xfe:
		if len(d) < 2 {
			return ccReqDataLen, nil
		}
		t = findSession(active, func(x *session) bool { return x.handle == d[1] })
	case idx == 0xff:
		if len(d) < 5 {
			return ccReqDataLen, nil
		}
		id := binary.LittleEndian.Uint32(d[1:5])
		t = findSession(active, func(x *session) bool { return x.id == id })
	case int(idx) <= len(active):
		t = active[idx-1]
	}
	if t == nil {
		return ccInvalidData, nil
	}
	return ccOK, sessionInfoLocked(t, len(active))
}

// activeSessionsLocked lists the active sessions by handle.
func (b *BMC) activeSessionsLocked() []*session {
	var out []*session
	for _, x := range b.sessions {
		if x.state == stateActive {
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].handle < out[j].handle })
	return out
}

func findSession(ss []*session, match func(*session) bool) *session {
	for _, x := range ss {
		if match(x) {
			return x
		}
	}
	return nil
}

// sessionInfoLocked is the Get Session Info answer for an active session
// on the LAN channel: its handle, user 2, its privilege, the protocol
// (v1.5 or v2.0) and the console's address as last seen.
func sessionInfoLocked(t *session, active int) []byte {
	proto := byte(0x00)
	if t.v2 {
		proto = 0x10
	}
	r := []byte{t.handle, min(maxSessions, 0x3f), byte(min(active, 0x3f)), 2, t.priv, proto | lanChannel}
	ip, mac, port := make([]byte, 4), make([]byte, 6), 0
	if t.addr != nil {
		if v4 := t.addr.IP.To4(); v4 != nil {
			copy(ip, v4)
		}
		port = t.addr.Port
	}
	r = append(r, ip...)
	r = append(r, mac...)
	return binary.LittleEndian.AppendUint16(r, uint16(port))
}

// getUserPayloadAccess answers Get User Payload Access (section 24.7):
// the BMC's user (ID 2) may activate SOL, the others nothing.
func (b *BMC) getUserPayloadAccess(_ *session, d []byte) (byte, []byte) {
	if len(d) < 2 {
		return ccReqDataLen, nil
	}
	if ch := d[0] & 0x0f; ch != lanChannel && ch != 0x0e {
		return ccInvalidData, nil
	}
	id := d[1] & 0x3f
	if id == 0 || id > maxUsers {
		return ccInvalidData, nil
	}
	std := byte(0)
	if id == 2 {
		std = 1 << payloadSOL
	}
	return ccOK, []byte{std, 0, 0, 0}
}

// channelSecurityKeys answers Set Channel Security Keys (section 22.25)
// in read mode only: no lock, and the keys are not set (K_G all zero, so
// RMCP+ uses the user's key as K_G). Setting keys is refused.
func (b *BMC) channelSecurityKeys(_ *session, d []byte) (byte, []byte) {
	if len(d) < 3 {
		return ccReqDataLen, nil
	}
	if ch := d[0] & 0x0f; ch != lanChannel && ch != 0x0e {
		return ccInvalidData, nil
	}
	if d[1]&0x03 != 0 || d[2] > 1 { // only "read key" of K_R (0) or K_G (1)
		return ccInvalidData, nil
	}
	return ccOK, append([]byte{0x00}, make([]byte, 20)...)
}
