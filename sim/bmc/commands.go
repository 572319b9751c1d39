package bmc

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Network functions and commands (IPMI v2.0 appendix G).
const (
	netFnChassis = 0x00
	netFnApp     = 0x06

	// App
	cmdGetDeviceID         = 0x01
	cmdGetSelfTestResults  = 0x04
	cmdGetSystemGUID       = 0x37
	cmdGetChanAuthCaps     = 0x38
	cmdGetSessionChallenge = 0x39
	cmdActivateSession     = 0x3a
	cmdSetSessionPriv      = 0x3b
	cmdCloseSession        = 0x3c
	cmdGetChanCipherSuites = 0x54

	// Chassis
	cmdGetChassisStatus = 0x01
	cmdChassisControl   = 0x02
	cmdChassisIdentify  = 0x04
	cmdSetBootOptions   = 0x08
	cmdGetBootOptions   = 0x09
)

// Completion codes (IPMI v2.0 table 5-2).
const (
	ccOK              = 0x00
	ccParamNotSupp    = 0x80 // command-specific: parameter not supported
	ccInvalidCommand  = 0xc1
	ccOutOfSpace      = 0xc4
	ccReqDataLen      = 0xc7
	ccInvalidData     = 0xcc
	ccInsufficientPrv = 0xd4
)

type cmdInfo struct {
	name string
	priv byte // session privilege the command needs
}

var commandTable = map[[2]byte]cmdInfo{
	{netFnApp, cmdGetDeviceID}:          {"Get Device ID", privUser},
	{netFnApp, cmdGetSelfTestResults}:   {"Get Self Test Results", privUser},
	{netFnApp, cmdGetSystemGUID}:        {"Get System GUID", privUser},
	{netFnApp, cmdGetChanAuthCaps}:      {"Get Channel Authentication Capabilities", privCallback},
	{netFnApp, cmdGetSessionChallenge}:  {"Get Session Challenge", privCallback},
	{netFnApp, cmdActivateSession}:      {"Activate Session", privCallback},
	{netFnApp, cmdSetSessionPriv}:       {"Set Session Privilege Level", privCallback},
	{netFnApp, cmdCloseSession}:         {"Close Session", privCallback},
	{netFnApp, cmdGetChanCipherSuites}:  {"Get Channel Cipher Suites", privCallback},
	{netFnChassis, cmdGetChassisStatus}: {"Get Chassis Status", privUser},
	{netFnChassis, cmdChassisControl}:   {"Chassis Control", privOperator},
	{netFnChassis, cmdChassisIdentify}:  {"Chassis Identify", privOperator},
	{netFnChassis, cmdSetBootOptions}:   {"Set System Boot Options", privOperator},
	{netFnChassis, cmdGetBootOptions}:   {"Get System Boot Options", privOperator},
}

func commandName(netFn, cmd byte) string {
	if c, ok := commandTable[[2]byte{netFn, cmd}]; ok {
		return c.name
	}
	return fmt.Sprintf("NetFn 0x%02x Cmd 0x%02x", netFn, cmd)
}

// Boot device selectors of boot flags (parameter 5) data byte 2, bits 5:2.
var bootSelectors = map[string]byte{"none": 0x0, "pxe": 0x1, "disk": 0x2, "cdrom": 0x5, "bios": 0x6}

// execute runs a request of the active session s and returns the
// completion code and response data.
func (b *BMC) execute(s *session, req *ipmiRequest) (byte, []byte) {
	b.countCommand(req.netFn, req.cmd)
	info, known := commandTable[[2]byte{req.netFn, req.cmd}]
	if !known {
		return ccInvalidCommand, nil
	}
	b.mu.Lock()
	priv := s.priv
	b.mu.Unlock()
	if priv < info.priv {
		return ccInsufficientPrv, nil
	}
	d := req.data
	if c, ok := inventoryCommands[[2]byte{req.netFn, req.cmd}]; ok { // inventory.go
		return c.run(b, s, d)
	}
	switch [2]byte{req.netFn, req.cmd} {
	case [2]byte{netFnApp, cmdGetDeviceID}:
		return ccOK, []byte{
			0x20,                                               // device ID
			0x01,                                               // device revision; no device SDRs
			fwMajor(b.opts.Firmware), fwMinor(b.opts.Firmware), // firmware revision, device available
			0x02,    // IPMI version 2.0
			0x8f,    // additional device support: chassis, FRU inventory, SEL, SDR repository, sensor devices
			0, 0, 0, // manufacturer ID (unspecified)
			0x01, 0x00, // product ID
			0, 0, 0, 0, // auxiliary firmware revision
		}
	case [2]byte{netFnApp, cmdGetSelfTestResults}:
		return ccOK, []byte{0x55, 0x00} // no error
	case [2]byte{netFnApp, cmdGetSystemGUID}:
		g := b.opts.GUID
		return ccOK, g[:]
	case [2]byte{netFnApp, cmdGetChanAuthCaps}:
		return b.getChannelAuthCaps(d)
	case [2]byte{netFnApp, cmdGetChanCipherSuites}:
		return b.getChannelCipherSuites(d)
	case [2]byte{netFnApp, cmdGetSessionChallenge}:
		return b.getSessionChallenge(d)
	case [2]byte{netFnApp, cmdActivateSession}:
		return ccInvalidCommand, nil // only valid in its own packet framing
	case [2]byte{netFnApp, cmdSetSessionPriv}:
		return b.setSessionPriv(s, d)
	case [2]byte{netFnApp, cmdCloseSession}:
		return b.closeSession(s, d)
	case [2]byte{netFnChassis, cmdGetChassisStatus}:
		return b.chassisStatus()
	case [2]byte{netFnChassis, cmdChassisControl}:
		return b.chassisControl(d)
	case [2]byte{netFnChassis, cmdChassisIdentify}:
		return ccOK, nil
	case [2]byte{netFnChassis, cmdSetBootOptions}:
		return b.setBootOptions(d)
	case [2]byte{netFnChassis, cmdGetBootOptions}:
		return b.getBootOptions(d)
	}
	return ccInvalidCommand, nil
}

// setSessionPriv answers Set Session Privilege Level (section 22.18):
// level 0 reports the current one.
func (b *BMC) setSessionPriv(s *session, d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccReqDataLen, nil
	}
	want := d[0] & 0x0f
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case want == 0: // report only
	case want > privOEM:
		return ccInvalidData, nil
	case want > s.maxPriv:
		return 0x81, nil // exceeds the session's privilege limit
	default:
		s.priv = want
	}
	return ccOK, []byte{s.priv}
}

// closeSession answers Close Session (section 22.19): a session closes
// itself; closing another takes the admin privilege.
func (b *BMC) closeSession(s *session, d []byte) (byte, []byte) {
	if len(d) < 4 {
		return ccReqDataLen, nil
	}
	id := binary.LittleEndian.Uint32(d)
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.sessions[id]
	if id == 0 || t == nil {
		return 0x87, nil // invalid session ID in request
	}
	if t != s && s.priv < privAdmin {
		return ccInsufficientPrv, nil
	}
	b.deleteSessionLocked(t)
	return ccOK, nil
}

// chassisStatus answers Get Chassis Status (section 28.2).
func (b *BMC) chassisStatus() (byte, []byte) {
	power := byte(0x20) // power restore policy: previous
	if b.chassis.IsPoweredOn() {
		power |= 0x01
	}
	b.mu.Lock()
	last := b.lastPowerEvent
	b.mu.Unlock()
	return ccOK, []byte{power, last, 0x40, 0x00}
}

// getChannelAuthCaps answers Get Channel Authentication Capabilities
// (section 22.13).
func (b *BMC) getChannelAuthCaps(d []byte) (byte, []byte) {
	if len(d) < 2 {
		return ccReqDataLen, nil
	}
	if ch := d[0] & 0x0f; ch != 0x0e && ch != 0x01 {
		return ccInvalidData, nil
	}
	if p := d[1] & 0x0f; p == 0 || p > privOEM {
		return ccInvalidData, nil
	}
	types, ext := b.v15AuthTypes(), byte(0)
	if d[0]&0x80 != 0 { // IPMI v2.0 extended data requested
		types |= 0x80
		ext = 0x03 // IPMI v1.5 and v2.0 connections
	}
	// Status: non-null user names enabled; per-message and user level
	// authentication enabled; K_G is the default (all zero).
	return ccOK, []byte{0x01, types, 0x04, ext, 0, 0, 0, 0}
}

// getChannelCipherSuites answers Get Channel Cipher Suites (section 22.15):
// 16-byte chunks of the cipher suite records, as many as asked by index.
func (b *BMC) getChannelCipherSuites(d []byte) (byte, []byte) {
	if len(d) < 3 {
		return ccReqDataLen, nil
	}
	if ch := d[0] & 0x0f; ch != 0x0e && ch != 0x01 {
		return ccInvalidData, nil
	}
	var recs []byte
	if d[2]&0x80 != 0 { // list algorithms by cipher suite
		for _, s := range b.suites() {
			recs = append(recs, 0xc0, s.id, s.auth, 0x40|s.integ, 0x80|s.conf)
		}
	} else { // list supported algorithms
		seen := map[byte]bool{}
		for _, s := range b.suites() {
			for _, a := range []byte{s.auth, 0x40 | s.integ, 0x80 | s.conf} {
				if !seen[a] {
					seen[a] = true
					recs = append(recs, a)
				}
			}
		}
	}
	start := min(int(d[2]&0x3f)*16, len(recs))
	end := min(start+16, len(recs))
	return ccOK, append([]byte{0x01}, recs[start:end]...)
}

// chassisControl answers Chassis Control (section 28.3).
func (b *BMC) chassisControl(d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccReqDataLen, nil
	}
	switch d[0] & 0x0f {
	case 0x0: // power down
		b.chassis.PowerOff()
	case 0x1: // power up
		b.chassis.PowerOn()
	case 0x2: // power cycle
		b.chassis.PowerCycle()
	case 0x3: // hard reset
		b.chassis.HardReset()
		b.mu.Lock()
		b.restartCause = restartChassisControl
		b.mu.Unlock()
	case 0x4: // pulse diagnostic interrupt: nothing to do
		return ccOK, nil
	case 0x5: // soft shutdown via ACPI: the OS powers the machine off
		if b.chassis.IsPoweredOn() {
			b.chassis.PowerOff()
		}
	default:
		return ccInvalidData, nil
	}
	if c := d[0] & 0x0f; c <= 0x2 || c == 0x5 {
		on := b.chassis.IsPoweredOn()
		b.mu.Lock()
		b.lastPowerEvent = 0x10 // last power event: IPMI command
		if c == 0x1 || c == 0x2 {
			b.restartCause = restartChassisControl
		}
		if c == 0x2 {
			b.logPowerLocked(false) // a cycle: off, then on
		}
		b.logPowerLocked(on)
		b.mu.Unlock()
	}
	return ccOK, nil
}

// setBootOptions answers Set System Boot Options (section 28.12).
func (b *BMC) setBootOptions(d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccReqDataLen, nil
	}
	param, v := d[0]&0x7f, d[1:]
	switch param {
	case 0: // set in progress
		if len(v) < 1 {
			return ccReqDataLen, nil
		}
		b.mu.Lock()
		b.boot.setInProgress = v[0] & 0x03
		if b.boot.setInProgress == 0x02 { // commit write: nothing is deferred
			b.boot.setInProgress = 0
		}
		b.mu.Unlock()
	case 3: // BMC boot flag valid bit clearing
		if len(v) < 1 {
			return ccReqDataLen, nil
		}
		b.mu.Lock()
		b.boot.validClear = v[0] & 0x1f
		b.mu.Unlock()
	case 4: // boot info acknowledge: byte 1 is a write mask for byte 2
		if len(v) < 2 {
			return ccReqDataLen, nil
		}
		b.mu.Lock()
		b.boot.ack[1] = b.boot.ack[1]&^v[0] | v[1]&v[0]
		b.mu.Unlock()
	case 5: // boot flags
		if len(v) < 5 {
			return ccReqDataLen, nil
		}
		sel := v[1] >> 2 & 0x0f
		dev := ""
		for name, s := range bootSelectors {
			if s == sel {
				dev = name
			}
		}
		if dev == "" {
			return ccInvalidData, nil // a device the Chassis does not model
		}
		persistent, efi := v[0]&0x40 != 0, v[0]&0x20 != 0
		if v[0]&0x80 == 0 { // flags not valid: no override
			dev, persistent, efi = "none", false, false
		}
		b.mu.Lock()
		copy(b.boot.flags[:], v[:5])
		b.mu.Unlock()
		b.chassis.SetBootDevice(dev, persistent, efi)
	default:
		return ccParamNotSupp, nil
	}
	return ccOK, nil
}

// getBootOptions answers Get System Boot Options (section 28.13).
func (b *BMC) getBootOptions(d []byte) (byte, []byte) {
	if len(d) < 3 {
		return ccReqDataLen, nil
	}
	param := d[0] & 0x7f
	r := []byte{0x01, param} // parameter version, parameter valid
	b.mu.Lock()
	st := b.boot
	b.mu.Unlock()
	switch param {
	case 0:
		return ccOK, append(r, st.setInProgress)
	case 3:
		return ccOK, append(r, st.validClear)
	case 4:
		return ccOK, append(r, st.ack[:]...)
	case 5:
		dev, persistent, efi := b.chassis.BootDevice()
		f := st.flags
		f[0] &^= 0xe0
		if dev != "none" || persistent {
			f[0] |= 0x80
		}
		if persistent {
			f[0] |= 0x40
		}
		if efi {
			f[0] |= 0x20
		}
		f[1] = f[1]&^0x3c | bootSelectors[dev]<<2
		return ccOK, append(r, f[:]...)
	}
	return ccParamNotSupp, nil
}

// fwMajor and fwMinor encode a "major.minor" firmware revision as Get
// Device ID does: the major in bits 6:0, the minor as two BCD digits.
func fwMajor(v string) byte {
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil || n < 0 || n > 127 {
		return 0x01
	}
	return byte(n)
}

func fwMinor(v string) byte {
	major, minor, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); err != nil || n < 0 || n > 127 {
		return 0
	}
	if len(minor) == 1 {
		minor += "0"
	}
	n, err := strconv.Atoi(minor)
	if err != nil || n < 0 || n > 99 || len(minor) != 2 {
		return 0
	}
	return byte(n/10<<4 | n%10)
}
