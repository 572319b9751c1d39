package drivers

import (
	"strconv"
	"time"
)

// Plain data the drivers exchange with the engine: no funcs, channels or
// interfaces, so that it crosses the plugin boundary as JSON.

// Config configures a driver instance: settings from the site design and
// resolved secrets (e.g. the MAAS API key).
type Config struct {
	Settings map[string]string `json:"settings,omitempty"`
	Secrets  map[string]Secret `json:"-"`
}

// BMC tells an OOB driver how to reach one node's BMC.
type BMC struct {
	Node        string `json:"node"`
	Address     string `json:"address"`
	Port        int    `json:"port"`
	Protocol    string `json:"protocol"` // lanplus | lan
	CipherSuite int    `json:"cipher_suite"`
	Privilege   string `json:"privilege"` // administrator | operator
	Username    string `json:"username"`
	Password    Secret `json:"password"`
	// HTTPS BMCs (Redfish): the CA file that signs their certificates,
	// or the SHA-256 fingerprint (hex) pinning this BMC's; Insecure skips
	// the check. SystemID is the system to drive ("": the only one).
	CAFile      string `json:"ca_file,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Insecure    bool   `json:"insecure,omitempty"`
	SystemID    string `json:"system_id,omitempty"`
}

// BMCInfo is what a probe learned.
type BMCInfo struct {
	Reachable   bool   `json:"reachable"`
	Authorized  bool   `json:"authorized"`
	Vendor      string `json:"vendor,omitempty"`
	Firmware    string `json:"firmware,omitempty"`
	GUID        string `json:"guid,omitempty"`
	Description string `json:"description,omitempty"`
}

// PowerState of a machine.
type PowerState string

// Power states.
const (
	PowerOn      PowerState = "on"
	PowerOff     PowerState = "off"
	PowerUnknown PowerState = "unknown"
)

// BootDevice selects the next boot device.
type BootDevice struct {
	Device     string `json:"device"` // pxe | disk
	Persistent bool   `json:"persistent"`
	EFI        bool   `json:"efi"`
}

// SiteInfo is what a server driver learned about its provisioner.
type SiteInfo struct {
	Reachable     bool     `json:"reachable"`
	Authenticated bool     `json:"authenticated"`
	Version       string   `json:"version,omitempty"`
	Capabilities  []string `json:"capabilities,omitempty"`
	BootImages    []string `json:"boot_images,omitempty"` // e.g. "ubuntu/jammy"
	// Kernels lists, by boot image, the kernels the provisioner has for
	// it (e.g. "ubuntu/jammy": ga-22.04, hwe-22.04). An image the map
	// does not name has kernels the driver can't tell (nil: none known).
	Kernels map[string][]string `json:"kernels,omitempty"`
	// DefaultOS is the operating system of an image named without one
	// ("jammy" is DefaultOS/jammy); DefaultImage is what a node that
	// names no image gets. "" when the driver can't tell.
	DefaultOS    string `json:"default_os,omitempty"`
	DefaultImage string `json:"default_image,omitempty"`
	// DHCPSubnets are the CIDRs of the subnets whose VLAN has DHCP served
	// (by the provisioner, or relayed to another VLAN that has): where a
	// machine can PXE-boot. Nil when the driver can't tell.
	DHCPSubnets []string `json:"dhcp_subnets,omitempty"`
	// Scripts are the provisioner's commissioning, testing and release
	// scripts (nil when the driver can't tell).
	Scripts []Script `json:"scripts,omitempty"`
}

// Script is one of a provisioner's scripts.
type Script struct {
	Name string `json:"name"`
	// Type: commissioning, testing, release or deployment.
	Type string `json:"type"`
	// Version is the script's current version (MAAS: the ID of its
	// latest history entry), Updated when it was made.
	Version string   `json:"version,omitempty"`
	Updated string   `json:"updated,omitempty"`
	Tags    []string `json:"tags,omitempty"`
}

// SiteSpec is what a server driver prepares before any node: the networks,
// the links (fabrics) carrying them, the DNS domain and the SSH keys.
type SiteSpec struct {
	// Name is the design's Site (several sites: the one to prepare).
	Name    string     `json:"name,omitempty"`
	Domain  string     `json:"domain,omitempty"`
	Subnets []Subnet   `json:"subnets"`
	Links   []SiteLink `json:"links,omitempty"`
	SSHKeys []string   `json:"ssh_keys,omitempty"`
	// PXENetwork is the network machines PXE-boot on: the provisioner
	// serves DHCP there. orchestrator/driverspec.Site says how the engine chooses it.
	PXENetwork string `json:"pxe_network,omitempty"`
}

// SiteLink is one of the design's NetworkLinks: an L2 domain (a MAAS
// fabric) and the networks it carries.
type SiteLink struct {
	Name          string   `json:"name"`
	MTU           int      `json:"mtu,omitempty"`
	Networks      []string `json:"networks,omitempty"`
	NativeNetwork string   `json:"native_network,omitempty"` // carried untagged
}

// Subnet is one of the design's L3 networks as drivers see it.
type Subnet struct {
	Name    string `json:"name"`
	CIDR    string `json:"cidr"`
	VLAN    int    `json:"vlan,omitempty"`
	MTU     int    `json:"mtu"`
	Gateway string `json:"gateway,omitempty"`
	// UntaggedVLAN is the VLAN switches carry an untagged subnet (VLAN
	// 0) on: the design's switchVlan (see SwitchVLAN).
	UntaggedVLAN int           `json:"untagged_vlan,omitempty"`
	DNSServers   []string      `json:"dns_servers,omitempty"`
	Ranges       []AddressPool `json:"ranges,omitempty"`
	Routes       []Route       `json:"routes,omitempty"`
}

// Route is a static route from a subnet.
type Route struct {
	To     string `json:"to"`
	Via    string `json:"via"`
	Metric int    `json:"metric,omitempty"`
}

// AddressPool is a typed range of addresses.
type AddressPool struct {
	Type  string `json:"type"` // static | dhcp | reserved
	Start string `json:"start"`
	End   string `json:"end"`
}

// NodeRef names a node and, once known, its provisioner machine.
type NodeRef struct {
	Name      string `json:"name"`
	MachineID string `json:"machine_id,omitempty"`
	// BudgetFrom opens a fresh failure budget: a driver that counts
	// earlier failures of a step to decide when to stop retrying it (e.g.
	// commissioning) counts none from before this time. The engine sets
	// it when an operator's retry or restart-clean starts the node's
	// step again; zero counts every failure the driver can see.
	BudgetFrom time.Time `json:"budget_from,omitzero"`
	// Scripts choose the scripts Commission runs (nil: the provisioner's
	// defaults); the engine sets them from the node's site profile.
	Scripts *CommissionScripts `json:"scripts,omitempty"`
}

// Node is everything a server or network driver needs about one node,
// taken from the resolved design.
type Node struct {
	NodeRef
	Hostname   string            `json:"hostname"`
	Domain     string            `json:"domain,omitempty"`
	BootMAC    string            `json:"boot_mac,omitempty"`
	BMCAddress string            `json:"bmc_address,omitempty"`
	Rack       string            `json:"rack,omitempty"`
	Primary    string            `json:"primary_network,omitempty"`
	Interfaces []Interface       `json:"interfaces,omitempty"`
	Storage    Storage           `json:"storage"`
	Platform   Platform          `json:"platform"`
	Tags       []string          `json:"tags,omitempty"`
	OwnerData  map[string]string `json:"owner_data,omitempty"`
	// Power is how the provisioner reaches the BMC (nil: leave it alone).
	Power *PowerSettings `json:"power,omitempty"`
	// Constraints choose the machine of a node the design does not pin
	// (no boot MAC or BMC that identifies one): the provisioner allocates
	// any machine that satisfies them (nil: the node must be pinned).
	Constraints *Constraints `json:"constraints,omitempty"`
	// Fabric is what the site's fabric says of the node's switch ports
	// (nil: the site declares no fabric; see PortPlan).
	Fabric *NodeFabric `json:"fabric,omitempty"`
}

// CommissionScripts are the scripts (names or tags) a commissioning runs:
// Commissioning besides the provisioner's required ones, and Testing
// ("none" for no tests; empty: the provisioner's default tests).
type CommissionScripts struct {
	Commissioning []string `json:"commissioning,omitempty"`
	Testing       []string `json:"testing,omitempty"`
}

// Constraints select a machine to allocate, as MAAS's allocate takes them.
type Constraints struct {
	Zone         string   `json:"zone,omitempty"`
	Pool         string   `json:"pool,omitempty"`
	Tags         []string `json:"tags,omitempty"` // every one required
	MinCPU       int      `json:"min_cpu,omitempty"`
	MinMemoryMiB int64    `json:"min_memory_mib,omitempty"`
}

// PowerSettings tell a provisioner how to power the machine through its
// BMC. The password crosses the plugin boundary in its own field.
type PowerSettings struct {
	Type        string `json:"type"` // ipmi | redfish
	Address     string `json:"address"`
	Port        int    `json:"port"`
	Protocol    string `json:"protocol"` // lanplus | lan
	CipherSuite int    `json:"cipher_suite"`
	Privilege   string `json:"privilege"` // administrator | operator
	Username    string `json:"username"`
	Password    Secret `json:"password"`
	EFI         bool   `json:"efi"`
	SystemID    string `json:"system_id,omitempty"` // redfish: the system ("": the only one)
}

// Interface is a node interface with its devices and networks resolved.
//
// Naming contract of server drivers (what ApplyNetworking leaves on the
// machine, and what the node's served network-config mirrors, see
// OSNames): the interface that carries the untagged traffic is named
// Name: the NIC itself when the link is not bonded, else a bond of that
// name whose members keep the kernel names commissioning gave them; a
// tagged network rides on a VLAN interface named <carrier>.<vlan id>.
type Interface struct {
	Name     string             `json:"name"`
	Link     Link               `json:"link"`
	Devices  []Device           `json:"devices"`
	Networks []InterfaceNetwork `json:"networks,omitempty"`
}

// Link describes the physical link or bond an interface sits on.
type Link struct {
	Name          string `json:"name"`
	MTU           int    `json:"mtu"`
	BondMode      string `json:"bond_mode"` // disabled | 802.3ad | active-backup | balance-rr
	BondHash      string `json:"bond_hash,omitempty"`
	LACPRate      string `json:"lacp_rate,omitempty"`
	MIIMon        int    `json:"miimon,omitempty"`
	UpDelay       int    `json:"updelay,omitempty"`
	DownDelay     int    `json:"downdelay,omitempty"`
	Trunking      string `json:"trunking"` // disabled | 802.1q
	NativeNetwork string `json:"native_network,omitempty"`
}

// Bonded reports whether the link bonds its devices.
func (l Link) Bonded() bool { return l.BondMode != "" && l.BondMode != "disabled" }

// VLANName is the name of the VLAN interface of a tagged network on a
// carrier interface (see Interface): <carrier>.<vlan id>, as MAAS names
// them.
func VLANName(carrier string, vid int) string { return carrier + "." + strconv.Itoa(vid) }

// Device is a NIC or disk: the design's alias and where it sits, so the
// driver can map it to the provisioner's name from commissioning data.
type Device struct {
	Alias   string `json:"alias"`
	Bus     string `json:"bus,omitempty"`     // pci | scsi | nvme; "" for a kernel name
	Address string `json:"address,omitempty"` // e.g. 0000:3b:00.0
	// Switch and Port: the switch port a NIC is cabled to, as the
	// design's cabling says ("": not cabled, or not a NIC).
	Switch string `json:"switch,omitempty"`
	Port   string `json:"port,omitempty"`
}

// InterfaceNetwork is a network on an interface and the node's address there.
type InterfaceNetwork struct {
	Subnet
	Address string `json:"address,omitempty"` // IP, "dhcp" or "" (carried, not addressed)
	// PointToPoint marks an address on a point-to-point subnet (a RoCE
	// /31 or /30) that is no network of the design: it rides untagged on
	// the interface besides the interface's own networks, and the server
	// driver creates its subnet on the interface's VLAN when the
	// provisioner has none.
	PointToPoint bool `json:"point_to_point,omitempty"`
}

// Storage is a node's disk layout.
type Storage struct {
	Devices      []StorageDevice `json:"devices,omitempty"`
	VolumeGroups []VolumeGroup   `json:"volume_groups,omitempty"`
}

// StorageDevice is a disk: partitioned or a whole-disk physical volume.
type StorageDevice struct {
	Device      Device      `json:"device"`
	Partitions  []Partition `json:"partitions,omitempty"`
	VolumeGroup string      `json:"volume_group,omitempty"`
}

// Partition of a device. Size is as the design writes it (10g, 25%, >20g).
type Partition struct {
	Name        string      `json:"name"`
	Size        string      `json:"size"`
	Bootable    bool        `json:"bootable,omitempty"`
	Filesystem  *Filesystem `json:"filesystem,omitempty"`
	VolumeGroup string      `json:"volume_group,omitempty"`
}

// Filesystem to create and mount.
type Filesystem struct {
	FSType     string `json:"fstype"`
	Mountpoint string `json:"mountpoint,omitempty"`
	Options    string `json:"options,omitempty"`
	Label      string `json:"label,omitempty"`
}

// VolumeGroup is an LVM volume group.
type VolumeGroup struct {
	Name           string          `json:"name"`
	LogicalVolumes []LogicalVolume `json:"logical_volumes,omitempty"`
}

// LogicalVolume is an LVM logical volume.
type LogicalVolume struct {
	Name       string      `json:"name"`
	Size       string      `json:"size"`
	Filesystem *Filesystem `json:"filesystem,omitempty"`
}

// Platform is the OS image and kernel.
type Platform struct {
	Image        string            `json:"image"`
	Kernel       string            `json:"kernel,omitempty"`
	KernelParams map[string]string `json:"kernel_params,omitempty"`
}

// Deployment is what Deploy needs beyond the node.
type Deployment struct {
	UserData []byte `json:"user_data,omitempty"` // cloud-init user data
}

// Machine is a provisioner's view of one machine.
type Machine struct {
	MachineID string `json:"machine_id"`
	// Site is the site that answered with the machine (a server over
	// several sites sets it; "" otherwise).
	Site     string     `json:"site,omitempty"`
	Node     string     `json:"node,omitempty"` // the design node the machine's owner data names
	Hostname string     `json:"hostname,omitempty"`
	State    string     `json:"state"` // the provisioner's state name, e.g. Ready, Deployed
	Power    PowerState `json:"power,omitempty"`
	Owned    bool       `json:"owned"` // carries this orchestrator's ownership marker
	// OwnerNode is the node this orchestrator's ownership marker names
	// ("" when the machine carries no marker of this orchestrator); Node
	// is the node asked about when there was one.
	OwnerNode string `json:"owner_node,omitempty"`
	// Tags are the machine's tags, sorted, without the driver's own
	// (kernel parameter tags); KernelOptions are the kernel parameters
	// the provisioner boots it with ("" none), as key=value words sorted
	// by key, a flag bare. Filled by Status and Owned.
	Tags          []string `json:"tags,omitempty"`
	KernelOptions string   `json:"kernel_options,omitempty"`
}

// Inventory is what a provisioner found on a node's machine when it
// commissioned it. A node's NICs are tied to the design's device aliases
// here once, so that what the node is served later (its netplan matched
// by MAC) never needs the provisioner at request time.
//
// The hardware facts (system, firmware, CPU, memory, GPUs, disks, the
// NICs' details) are what commissioning reported; a driver fills what its
// provisioner knows and leaves the rest zero.
type Inventory struct {
	MachineID string      `json:"machine_id"`
	NICs      []NIC       `json:"nics"`
	System    System      `json:"system,omitzero"`
	Firmware  Firmware    `json:"firmware,omitzero"`
	CPU       CPU         `json:"cpu,omitzero"`
	MemoryMiB int64       `json:"memory_mib,omitempty"`
	GPUs      []PCIDevice `json:"gpus,omitempty"` // GPUs and other PCI accelerators
	Disks     []Disk      `json:"disks,omitempty"`
}

// System is the machine's DMI identity.
type System struct {
	Vendor  string `json:"vendor,omitempty"`
	Product string `json:"product,omitempty"`
	Serial  string `json:"serial,omitempty"`
}

// Firmware versions.
type Firmware struct {
	BIOSVendor  string `json:"bios_vendor,omitempty"`
	BIOSVersion string `json:"bios_version,omitempty"`
	BIOSDate    string `json:"bios_date,omitempty"`
	BMCVersion  string `json:"bmc_version,omitempty"`
}

// CPU is the machine's processors.
type CPU struct {
	Model   string `json:"model,omitempty"`
	Sockets int    `json:"sockets,omitempty"`
	Cores   int    `json:"cores,omitempty"`   // physical cores, all sockets
	Threads int    `json:"threads,omitempty"` // logical CPUs
}

// PCIDevice is a PCI device such as a GPU.
type PCIDevice struct {
	Vendor    string `json:"vendor,omitempty"` // e.g. NVIDIA Corporation
	Model     string `json:"model,omitempty"`  // e.g. GH100 [H100 SXM5 80GB]
	VendorID  string `json:"vendor_id,omitempty"`
	ProductID string `json:"product_id,omitempty"`
	Address   string `json:"address"` // PCI address, 0000:ca:00.0
	NUMANode  int    `json:"numa_node"`
}

// Disk is a block device found by commissioning.
type Disk struct {
	Alias      string `json:"alias,omitempty"` // the design's device alias ("" when none)
	Name       string `json:"name"`            // e.g. sda, nvme0n1
	Model      string `json:"model,omitempty"`
	Serial     string `json:"serial,omitempty"`
	SizeBytes  int64  `json:"size_bytes"`
	BusAddress string `json:"bus_address,omitempty"` // PCI or SCSI address the design's aliases name
	Rotational bool   `json:"rotational,omitempty"`
}

// NIC is a physical network interface found by commissioning.
type NIC struct {
	// Alias is the design's device alias of this NIC ("" when the
	// design does not name it).
	Alias string `json:"alias,omitempty"`
	// Name is the kernel name commissioning saw (e.g. enp65s0f0).
	Name       string `json:"name"`
	MAC        string `json:"mac"` // lower case, colon separated
	PCIAddress string `json:"pci_address,omitempty"`
	Driver     string `json:"driver,omitempty"`
	Vendor     string `json:"vendor,omitempty"`
	Product    string `json:"product,omitempty"`
	Firmware   string `json:"firmware,omitempty"`
	SpeedMbps  int    `json:"speed_mbps,omitempty"` // the link's negotiated speed (0: unknown or down)
	LinkUp     bool   `json:"link_up,omitempty"`
	// Neighbor is the switch port LLDP saw on the other end (nil: none).
	Neighbor *Neighbor `json:"neighbor,omitempty"`
}

// Neighbor is an LLDP neighbour: the switch and port a NIC is cabled to.
type Neighbor struct {
	Switch    string `json:"switch"` // LLDP system name
	Port      string `json:"port"`   // LLDP port ID or description, e.g. Ethernet12
	ChassisID string `json:"chassis_id,omitempty"`
}

// NIC returns the inventory's NIC of a design alias.
func (inv Inventory) NIC(alias string) (NIC, bool) {
	for _, n := range inv.NICs {
		if n.Alias == alias {
			return n, true
		}
	}
	return NIC{}, false
}

// Recovery is a recovery action on a machine.
type Recovery string

// Recovery actions. Each is idempotent: asked again once its goal is
// reached it reports Done; while the provisioner is getting there
// (entering rescue mode, testing, ...) it reports InProgress and the
// caller polls by asking for the same action again.
const (
	RecoveryAbort      Recovery = "abort"       // stop a running operation
	RecoveryMarkFixed  Recovery = "mark-fixed"  // clear a broken state after repair
	RecoveryMarkBroken Recovery = "mark-broken" // take a machine out of service for repair
	RecoveryRescue     Recovery = "rescue"      // boot the machine into the provisioner's rescue environment
	RecoveryExitRescue Recovery = "exit-rescue" // leave rescue mode, back to the state before it
	RecoveryTest       Recovery = "test"        // run the provisioner's hardware tests
	RecoveryDelete     Recovery = "delete"      // remove the machine from the provisioner
)

// Recoveries lists the recovery actions, in the order above.
var Recoveries = []Recovery{
	RecoveryAbort, RecoveryMarkFixed, RecoveryMarkBroken,
	RecoveryRescue, RecoveryExitRescue, RecoveryTest, RecoveryDelete,
}

// Erase is what a release does to the machine's disks.
type Erase string

// Erase policies.
const (
	// EraseDefault ("") leaves it to the driver's own setting (the MAAS
	// driver's erase/quickErase settings).
	EraseDefault Erase = ""
	EraseNone    Erase = "none"   // release without erasing
	EraseQuick   Erase = "quick"  // wipe the start and end of each disk
	EraseSecure  Erase = "secure" // the disks' secure erase, falling back to a full overwrite
)

// Valid reports whether e is one of the erase policies.
func (e Erase) Valid() bool {
	switch e {
	case EraseDefault, EraseNone, EraseQuick, EraseSecure:
		return true
	}
	return false
}

// Phase of network port configuration.
type Phase string

// Network phases.
const (
	PhaseProvisioning Phase = "provisioning" // PXE network native, for commissioning and deploy
	PhaseProduction   Phase = "production"   // the design's networks
)

// NetworkInfo is what a network driver learned when probed.
type NetworkInfo struct {
	Reachable   bool   `json:"reachable"`
	Description string `json:"description,omitempty"`
}

// Parts of a machine a planned change touches. On a machine past Ready
// (allocated or deployed) the provisioner accepts no interface or
// storage change, so those need a redeploy; tags, kernel options,
// hostname and owner data change in place.
const (
	PartInterfaces    = "interfaces"     // interfaces, bonds, VLANs, links
	PartStorage       = "storage"        // partitions, volume groups, filesystems, layout
	PartTags          = "tags"           // the machine's tags
	PartKernelOptions = "kernel-options" // the kernel parameters it boots with
	PartHostname      = "hostname"
	PartOwner         = "owner"   // the ownership marker (owner data)
	PartImage         = "image"   // OS, series or kernel deployed (a redeploy)
	PartFabric        = "fabric"  // site: fabrics
	PartVLAN          = "vlan"    // site: VLANs, DHCP on them
	PartSubnet        = "subnet"  // site: subnets (gateway, DNS)
	PartRange         = "range"   // site: reserved and dynamic ranges
	PartRoute         = "route"   // site: static routes
	PartSSHKey        = "ssh-key" // site: the deploying user's keys
	PartDomain        = "domain"  // site: the DNS domain of the machines
)

// PlannedChange is one object a configuration call would create, change
// or delete. Op is "create", "update" or "delete"; Object names it
// (e.g. "bond0", "subnet 10.0.0.0/24"); Detail says what changes, from
// what to what, in the provisioner's terms.
type PlannedChange struct {
	Part   string `json:"part"`
	Op     string `json:"op"`
	Object string `json:"object"`
	Detail string `json:"detail,omitempty"`
}

// MachinePlan is what configuring and deploying a node would change on
// its machine as the provisioner holds it now.
type MachinePlan struct {
	Node  string  `json:"node"`
	Found bool    `json:"found"` // the provisioner knows the node's machine
	Now   Machine `json:"machine"`
	// Deployed names the image the machine runs now when it is past
	// Ready ("ubuntu/jammy hwe-22.04"); "" otherwise.
	Deployed string          `json:"deployed,omitempty"`
	Changes  []PlannedChange `json:"changes,omitempty"`
}
