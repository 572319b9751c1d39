// Package redfish is the built-in Redfish out-of-band driver: what Dell
// iDRAC 9+, HPE iLO 5+, Supermicro X12+ and GPU systems' BMCs speak over
// HTTPS, some with IPMI over LAN turned off.
//
// It is built on github.com/stmcginnis/gofish (v0.20.0): a maintained,
// typed client of DMTF's Redfish schema with session handling, which
// MAAS-adjacent and Metal3-adjacent Go tools use, so the driver does not
// hand-write the schema's resources, links and actions.
//
// What it does, for drivers.OOB: Probe (vendor, model, serial, system
// UUID, BMC firmware); power status, on, off (GracefulShutdown, then
// ForceOff when the system is still on after gracefulWait), cycle
// (ForceRestart, PowerCycle, or off then on, as the system allows), each
// read back; the boot override (Pxe, Hdd, Cd, BiosSetup, UefiHttp; Once
// or Continuous; UEFI or Legacy) read back and refused by name when the
// BMC did not take it. For drivers.OOBBIOS: the BIOS attributes in effect,
// and staging those that differ in the Bios settings object for the next
// reset. For drivers.OOBFirmwareUpdate: the firmware inventory, updates
// through UpdateService.SimpleUpdate (never a second one while one runs)
// followed by their task monitor, also through the BMC's own reset
// (update.go). For drivers.OOBRAID: the system's Storage, its drives and
// volumes, building and deleting volumes (raid.go). For
// drivers.OOBVirtualMedia: the virtual CD, insert and eject (media.go).
//
// Sessions: one login per BMC, user and password, reused by later calls
// (X-Auth-Token) and logged in again once when the BMC has dropped it;
// Close logs them out. TLS: the BMC's certificate is checked against a CA
// file (bmc.CAFile), or pinned by its SHA-256 fingerprint
// (bmc.Fingerprint), else against the system's roots; bmc.Insecure skips
// the check and is only set when the design says so. A 503 is retried
// after its Retry-After (at most retries times, never past the call's
// deadline); an operation the BMC runs as a task (202 and a task
// monitor) is followed to its end. No error or log carries the password.
package redfish
