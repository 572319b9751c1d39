// Package redfish is the lab's simulated Redfish service: one per
// machine, HTTPS on loopback with a certificate of a lab CA, serving the
// resource shapes of DMTF's public-rackmount1 mockup (internal/redfishmock)
// with the machine's live state in them. It answers what operators' tools
// and the Redfish driver ask of a real BMC: sessions (X-Auth-Token) and
// HTTP Basic, the system's power state and ComputerSystem.Reset, the boot
// override (PATCH, read back, "Once" cleared by the next boot), BIOS
// attributes with pending settings applied at the next reset, virtual
// media insert and eject, the firmware inventory; and it fails the way
// BMCs fail: unreachable, slow, or busy (503 with Retry-After).
//
// What it leaves out of a real iDRAC or iLO: vendor Oem sections beyond
// the mockup's, accounts, event subscriptions, certificates management
// and firmware updates; only the virtual media insert runs as a task (a
// task monitor). docs/lab.md lists the differences.
package redfish
