package bmc

// Chassis and repository commands FreeIPMI's ipmi-chassis and bmc-device
// send besides those of commands.go and inventory.go.
const (
	cmdGetChassisCapabilities = 0x00 // Chassis
	cmdGetSystemRestartCause  = 0x07 // Chassis
	cmdGetSDRRepoTime         = 0x28 // Storage

	restartChassisControl = 0x01 // restart cause: Chassis Control command
)

var chassisCommands = map[[2]byte]struct {
	info cmdInfo
	run  handler
}{
	{netFnChassis, cmdGetChassisCapabilities}: {cmdInfo{"Get Chassis Capabilities", privUser}, (*BMC).getChassisCapabilities},
	{netFnChassis, cmdGetSystemRestartCause}:  {cmdInfo{"Get System Restart Cause", privUser}, (*BMC).getSystemRestartCause},
	{netFnStorage, cmdGetSDRRepoTime}:         {cmdInfo{"Get SDR Repository Time", privUser}, (*BMC).getSDRRepoTime},
}

func init() {
	for k, c := range chassisCommands {
		inventoryCommands[k] = c
		commandTable[k] = c.info
	}
}

// getChassisCapabilities answers Get Chassis Capabilities (IPMI v2.0
// section 28.1): no intrusion sensor, lockout, diagnostic interrupt or
// interlock; the BMC (0x20) holds the FRU, SDR and SEL devices and is the
// system management device.
func (b *BMC) getChassisCapabilities(_ *session, _ []byte) (byte, []byte) {
	return ccOK, []byte{0x00, bmcSlaveAddr, bmcSlaveAddr, bmcSlaveAddr, bmcSlaveAddr}
}

// getSystemRestartCause answers Get System Restart Cause (section 28.11):
// "chassis control command" once the machine was powered up, cycled or
// reset through IPMI, unknown before (a power change the machine made
// itself is not seen here), on the LAN channel.
func (b *BMC) getSystemRestartCause(_ *session, _ []byte) (byte, []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return ccOK, []byte{b.restartCause, lanChannel}
}

// getSDRRepoTime answers Get SDR Repository Time (section 33.11): the
// BMC's clock, as Get SEL Time.
func (b *BMC) getSDRRepoTime(_ *session, _ []byte) (byte, []byte) {
	return ccOK, le32(now())
}
