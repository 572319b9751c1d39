package bmc

import (
	"encoding/binary"
	"time"
)

// What operators' tools and MAAS's checks ask a BMC besides power and
// boot (ipmitool channel info, lan print, user list, fru print, sdr list,
// sensor list, sel info/list, sol info, mc guid). The answers follow IPMI
// v2.0: channel 1 is the LAN channel this BMC serves, user 2 its one user.

// More network functions and commands (IPMI v2.0 appendix G).
const (
	netFnSensor    = 0x04
	netFnStorage   = 0x0a
	netFnTransport = 0x0c

	cmdGetDeviceGUID     = 0x08 // App
	cmdGetChannelAccess  = 0x41 // App
	cmdGetChannelInfo    = 0x42 // App
	cmdGetUserAccess     = 0x44 // App
	cmdGetUserName       = 0x46 // App
	cmdGetSensorReading  = 0x2d // Sensor/Event
	cmdGetFRUAreaInfo    = 0x10 // Storage
	cmdReadFRUData       = 0x11
	cmdGetSDRRepoInfo    = 0x20
	cmdReserveSDRRepo    = 0x22
	cmdGetSDR            = 0x23
	cmdGetSELInfo        = 0x40
	cmdReserveSEL        = 0x42
	cmdGetSELEntry       = 0x43
	cmdClearSEL          = 0x47
	cmdGetSELTime        = 0x48
	cmdGetLANConfig      = 0x02 // Transport
	cmdGetSOLConfig      = 0x22 // Transport
	lanChannel           = 0x01
	maxUsers             = 0x0f
	ccReservationInvalid = 0xc5
	ccNotPresent         = 0xcb
)

// handler answers one command of a session.
type handler func(b *BMC, s *session, d []byte) (byte, []byte)

// inventoryCommands are the commands this file answers, with the
// privilege each needs.
var inventoryCommands = map[[2]byte]struct {
	info cmdInfo
	run  handler
}{
	{netFnApp, cmdGetDeviceGUID}:       {cmdInfo{"Get Device GUID", privUser}, (*BMC).getGUID},
	{netFnApp, cmdGetChannelInfo}:      {cmdInfo{"Get Channel Info", privUser}, (*BMC).getChannelInfo},
	{netFnApp, cmdGetChannelAccess}:    {cmdInfo{"Get Channel Access", privUser}, (*BMC).getChannelAccess},
	{netFnApp, cmdGetUserAccess}:       {cmdInfo{"Get User Access", privOperator}, (*BMC).getUserAccess},
	{netFnApp, cmdGetUserName}:         {cmdInfo{"Get User Name", privOperator}, (*BMC).getUserName},
	{netFnTransport, cmdGetLANConfig}:  {cmdInfo{"Get LAN Configuration Parameters", privOperator}, (*BMC).getLANConfig},
	{netFnTransport, cmdGetSOLConfig}:  {cmdInfo{"Get SOL Configuration Parameters", privUser}, (*BMC).getSOLConfig},
	{netFnStorage, cmdGetFRUAreaInfo}:  {cmdInfo{"Get FRU Inventory Area Info", privUser}, (*BMC).getFRUAreaInfo},
	{netFnStorage, cmdReadFRUData}:     {cmdInfo{"Read FRU Data", privUser}, (*BMC).readFRUData},
	{netFnStorage, cmdGetSDRRepoInfo}:  {cmdInfo{"Get SDR Repository Info", privUser}, (*BMC).getSDRRepoInfo},
	{netFnStorage, cmdReserveSDRRepo}:  {cmdInfo{"Reserve SDR Repository", privUser}, (*BMC).reserve},
	{netFnStorage, cmdGetSDR}:          {cmdInfo{"Get SDR", privUser}, (*BMC).getSDR},
	{netFnSensor, cmdGetSensorReading}: {cmdInfo{"Get Sensor Reading", privUser}, (*BMC).getSensorReading},
	{netFnStorage, cmdGetSELInfo}:      {cmdInfo{"Get SEL Info", privUser}, (*BMC).getSELInfo},
	{netFnStorage, cmdReserveSEL}:      {cmdInfo{"Reserve SEL", privUser}, (*BMC).reserve},
	{netFnStorage, cmdGetSELEntry}:     {cmdInfo{"Get SEL Entry", privUser}, (*BMC).getSELEntry},
	{netFnStorage, cmdClearSEL}:        {cmdInfo{"Clear SEL", privOperator}, (*BMC).clearSEL},
	{netFnStorage, cmdGetSELTime}:      {cmdInfo{"Get SEL Time", privUser}, (*BMC).getSELTime},
}

func init() {
	for k, c := range inventoryCommands {
		commandTable[k] = c.info
	}
}

// getGUID answers Get Device GUID: the BMC's GUID (Options.GUID).
func (b *BMC) getGUID(_ *session, _ []byte) (byte, []byte) {
	g := b.opts.GUID
	return ccOK, g[:]
}

// getChannelInfo answers Get Channel Info (section 22.24) for the LAN
// channel (1, or 0x0e: this one).
func (b *BMC) getChannelInfo(_ *session, d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccReqDataLen, nil
	}
	if ch := d[0] & 0x0f; ch != lanChannel && ch != 0x0e {
		return ccInvalidData, nil
	}
	b.mu.Lock()
	active := byte(min(len(b.sessions), 0x3f))
	b.mu.Unlock()
	// LAN 802.3, IPMB-1.0 protocol, multi-session, IPMI's IANA number.
	return ccOK, []byte{lanChannel, 0x04, 0x01, 0x80 | active, 0xf2, 0x1b, 0x00, 0x00, 0x00}
}

// getChannelAccess answers Get Channel Access (section 22.23): always
// available, per-message and user-level authentication on, admin limit.
func (b *BMC) getChannelAccess(_ *session, d []byte) (byte, []byte) {
	if len(d) < 2 {
		return ccReqDataLen, nil
	}
	if ch := d[0] & 0x0f; ch != lanChannel && ch != 0x0e {
		return ccInvalidData, nil
	}
	return ccOK, []byte{0x02, privAdmin}
}

// getUserAccess answers Get User Access (section 22.27): 15 user IDs, one
// enabled (ID 2, this BMC's user, administrator on the LAN channel).
func (b *BMC) getUserAccess(_ *session, d []byte) (byte, []byte) {
	if len(d) < 2 {
		return ccReqDataLen, nil
	}
	id := d[1] & 0x3f
	if id == 0 || id > maxUsers {
		return ccInvalidData, nil
	}
	access := byte(0x0f) // no access
	if id == 2 {
		access = 0x30 | privAdmin // link auth, IPMI messaging, administrator
	}
	return ccOK, []byte{maxUsers, 0x40 | 0x01, 0x01, access}
}

// getUserName answers Get User Name (section 22.29): 16 bytes, padded.
func (b *BMC) getUserName(_ *session, d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccReqDataLen, nil
	}
	name := make([]byte, 16)
	switch id := d[0] & 0x3f; {
	case id == 0 || id > maxUsers:
		return ccInvalidData, nil
	case id == 2:
		copy(name, b.opts.Username)
	}
	return ccOK, name
}

// now is the BMC's clock in IPMI timestamps (seconds since 1970).
func now() uint32 { return uint32(time.Now().Unix()) }

func le16(v int) []byte { return binary.LittleEndian.AppendUint16(nil, uint16(v)) }

// reserve answers Reserve SDR Repository and Reserve SEL: a reservation
// ID that Get SDR and Get SEL Entry accept (this BMC does not cancel
// reservations: nothing else writes while one reads).
func (b *BMC) reserve(_ *session, _ []byte) (byte, []byte) {
	return ccOK, le16(0x0001)
}
