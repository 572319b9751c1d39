package drivers

import (
	"context"
	"errors"
	"io"
)

// Driver kinds.
const (
	KindOOB     = "oob"
	KindServer  = "server"
	KindNetwork = "network"
)

// OOB drives a server's BMC: power and boot device.
type OOB interface {
	Probe(ctx context.Context, bmc BMC) (BMCInfo, error)
	PowerStatus(ctx context.Context, bmc BMC) (PowerState, error)
	PowerOn(ctx context.Context, bmc BMC) (Result, error)
	PowerOff(ctx context.Context, bmc BMC) (Result, error)
	PowerCycle(ctx context.Context, bmc BMC) (Result, error)
	SetBootDevice(ctx context.Context, bmc BMC, dev BootDevice) (Result, error)
}

// ErrBootNotKept is wrapped, in a Transient error, by SetBootDevice when
// the BMC accepted the boot override but reads back other flags or
// another device than it was given (OpenIPMI's ipmi_sim reads back
// 00 04 00 00 00: flags not kept, valid bit clear). Such BMCs may still
// act on a one-time override: the engine tries once more, then sets a
// one-time override before each power cycle. Built-in drivers only: the
// plugin protocol carries the error's class and message, not this.
var ErrBootNotKept = errors.New("the BMC does not keep the boot override")

// BootFlagsCleared is in the message of a SetBootDevice result that is
// Done although the BMC reads the override back with the right device but
// its valid bit clear: OpenIPMI's ipmi_sim
// does, and real BMCs clear the valid bit at once or after the spec's 60
// seconds. It is not a failure; the caller sets the override again right
// before it powers the machine on. Another device, or a valid override
// with other persistent or EFI bits than were set, is ErrBootNotKept.
const BootFlagsCleared = "the valid bit reads back clear"

// OOBFirmware is implemented by OOB drivers that read a server's firmware
// versions from its BMC (Redfish's firmware inventory). The engine
// completes the inventory commissioning found with them.
type OOBFirmware interface {
	Firmware(ctx context.Context, bmc BMC) (Firmware, error)
}

// OOBBIOS is implemented by OOB drivers that read and stage a server's
// firmware (BIOS/UEFI) settings, such as Redfish's Bios resource. The
// engine applies a hardware profile's bios.attributes through it while it
// prepares a node. Values are strings: the driver converts each to the
// type its attribute has.
type OOBBIOS interface {
	// BIOSAttributes returns the settings in effect.
	BIOSAttributes(ctx context.Context, bmc BMC) (map[string]string, error)
	// ApplyBIOS stages the settings of want that differ from those in
	// effect, to take effect at the machine's next reset: Done when all
	// are in effect already, InProgress while some wait for a reset (the
	// message names them), Failed when the BMC refuses one (it names it).
	ApplyBIOS(ctx context.Context, bmc BMC, want map[string]string) (Result, error)
}

// OOBConsole is implemented by OOB drivers that attach to a server's
// serial console through its BMC (IPMI Serial over LAN). Console copies
// what the server writes to io.Out until ctx is done (nil: the console
// was detached) or the BMC ends it (an error saying so). A BMC carries one
// console at a time: while another is attached, Console fails with an
// error wrapping ErrConsoleBusy.
type OOBConsole interface {
	Console(ctx context.Context, bmc BMC, io ConsoleIO) error
}

// ConsoleIO is what a console is connected to.
type ConsoleIO struct {
	Out io.Writer
	// In carries what is typed at the console; nil makes it read-only.
	In <-chan []byte
	// Attached, when set, is called once the BMC has accepted the console,
	// before anything is written to Out.
	Attached func()
}

// ErrConsoleBusy: the BMC's console is attached elsewhere.
var ErrConsoleBusy = errors.New("the BMC's serial console is attached elsewhere")

// ServerSite is the site-wide part of a server driver.
type ServerSite interface {
	ProbeSite(ctx context.Context) (SiteInfo, error)
	PrepareSite(ctx context.Context, site SiteSpec) (Result, error)
}

// ServerNode is the per-node lifecycle of a server driver. IdentifyNode
// finds the node's machine (or enlists it) and returns it with the ID.
type ServerNode interface {
	IdentifyNode(ctx context.Context, n Node) (Machine, Result, error)
	Commission(ctx context.Context, n NodeRef) (Result, error)
	ApplyNetworking(ctx context.Context, n Node) (Result, error)
	ApplyStorage(ctx context.Context, n Node) (Result, error)
	ApplyPlatform(ctx context.Context, n Node) (Result, error)
	Deploy(ctx context.Context, n Node, d Deployment) (Result, error)
	// Release gives the machine back to the provisioner's pool,
	// erasing its disks as erase says ("": the driver's default).
	Release(ctx context.Context, n NodeRef, erase Erase) (Result, error)
}

// ServerInventory reports machines.
type ServerInventory interface {
	// Status returns the machines of the given nodes, in order; a node
	// whose machine is unknown gets a Machine with an empty MachineID.
	Status(ctx context.Context, nodes []NodeRef) ([]Machine, error)
	// Owned lists the machines carrying this orchestrator's marker.
	Owned(ctx context.Context) ([]Machine, error)
}

// ServerHardware reports a machine's hardware.
type ServerHardware interface {
	// Inventory returns what commissioning found on the node's machine,
	// the NICs tied to the design's device aliases. The machine must
	// have been commissioned.
	Inventory(ctx context.Context, n Node) (Inventory, error)
}

// ServerRecovery runs recovery actions.
type ServerRecovery interface {
	Recover(ctx context.Context, n NodeRef, action Recovery) (Result, error)
}

// Server is a whole server provisioning driver. Consumers that need less
// take the role interfaces above.
type Server interface {
	ServerSite
	ServerNode
	ServerInventory
	ServerHardware
	ServerRecovery
}

// Network configures the switch ports of a node's interfaces.
type Network interface {
	Probe(ctx context.Context) (NetworkInfo, error)
	ConfigurePorts(ctx context.Context, n Node, phase Phase) (Result, error)
}

// ErrCannotPlan is wrapped by a wrapper of server drivers (a site
// multiplexer, a rebinding) whose driver behind is no ServerPlanner: the
// engine plans from the design and its records and says so.
var ErrCannotPlan = errors.New("the server driver cannot plan")

// ServerPlanner is the read-only side of a server driver's
// configuration: what ApplyNetworking, ApplyStorage, ApplyPlatform, the
// owner data and Deploy would change on each node's machine, and what
// PrepareSite would change in the site, computed from what the
// provisioner holds now without writing anything. A driver that cannot
// tell leaves it unimplemented; the engine then plans from the design
// and its records alone and says so.
type ServerPlanner interface {
	// PlanNodes answers one MachinePlan per node, in order, reading
	// the machines in bounded batches (as Status does). A node whose
	// MachineID is "" or unknown to the provisioner gets Found false.
	PlanNodes(ctx context.Context, nodes []Node) ([]MachinePlan, error)
	// PlanSite lists what PrepareSite(site) would change.
	PlanSite(ctx context.Context, site SiteSpec) ([]PlannedChange, error)
}
