package design

// APIVersion is the only apiVersion of site documents this build reads.
const APIVersion = "slipway/v1"

// The document kinds.
const (
	KindSite            = "Site"
	KindNetwork         = "Network"
	KindNetworkLink     = "NetworkLink"
	KindHardwareProfile = "HardwareProfile"
	KindHostProfile     = "HostProfile"
	KindNode            = "Node"
	KindBootAction      = "BootAction"
)

// Kinds lists the document kinds in the order they are reported.
var Kinds = []string{KindSite, KindNetwork, KindNetworkLink, KindHardwareProfile, KindHostProfile, KindNode, KindBootAction, KindImage}

// Design is a fully resolved, validated site. Host profiles are resolved
// along their chains; nodes carry their profile chain and hardware profile.
type Design struct {
	Site *Site `json:"site"`
	// Sites are all the Sites of a design with several (nil with one);
	// Site is the first by name (sites.go).
	Sites            map[string]*Site            `json:"sites,omitempty"`
	Networks         map[string]*Network         `json:"networks"`
	NetworkLinks     map[string]*NetworkLink     `json:"network_links" yaml:"networkLinks"`
	HardwareProfiles map[string]*HardwareProfile `json:"hardware_profiles" yaml:"hardwareProfiles"`
	HostProfiles     map[string]*HostProfile     `json:"host_profiles" yaml:"hostProfiles"`
	Nodes            map[string]*Node            `json:"nodes"`
	BootActions      map[string]*BootAction      `json:"boot_actions" yaml:"bootActions"`
	// Images are the Image documents (image.go, images.go); absent from
	// the canonical JSON when there are none.
	Images map[string]*Image `json:"images,omitempty"`
}

// ObjectMeta is the metadata of every document.
type ObjectMeta struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	// Pos is where the document starts (the first layer that defined it).
	Pos Pos `json:"-"`
}

// Site is the one Site document.
type Site struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     SiteSpec   `json:"spec"`
}

// SiteSpec holds site-wide settings.
type SiteSpec struct {
	Domain        string              `json:"domain,omitempty"`
	DNS           DNSConfig           `json:"dns,omitzero"`
	NTP           NTPConfig           `json:"ntp,omitzero"`
	SSHKeys       []string            `json:"ssh_keys,omitempty" yaml:"sshKeys"`
	Drivers       DriverNames         `json:"drivers"`
	MAAS          MAASConfig          `json:"maas,omitzero"`
	Introspection IntrospectionConfig `json:"introspection,omitzero"`
	Defaults      SiteDefaults        `json:"defaults,omitzero"`
	// Lifecycle: the site's erase policy, retry budgets and stage
	// timeouts (validate_lifecycle.go).
	Lifecycle Lifecycle `json:"lifecycle,omitzero"`
	// Reconciliation: how often serve compares the provisioner with the
	// design and what it does with each kind of drift
	// (validate_reconcile.go).
	Reconciliation Reconciliation `json:"reconciliation,omitzero"`
	// HardwareTags name hardware facts: the engine tags a machine in the
	// provisioner with every tag whose facts its inventory has
	// (validate_hardware.go).
	HardwareTags    []HardwareTag `json:"hardware_tags,omitempty" yaml:"hardwareTags"`
	HardwareTagsPos Pos           `json:"-" pos:"hardwareTags"`
	// Fabric: the switches the Site's nodes are cabled to and its
	// quarantine VLAN (validate_fabric.go); zero when Slipway does not
	// configure switches (network driver noop).
	Fabric Fabric `json:"fabric,omitzero"`
}

// HardwareTag is a provisioner tag given to every machine whose
// inventory has all of its facts: at least Count GPUs whose model
// matches, a NIC of at least NICSpeedMinMbps, at least CPU.Count logical
// CPUs of a matching model, at least MemoryMin of memory.
type HardwareTag struct {
	Name            string      `json:"name" required:"true"`
	GPUs            *ExpectGPUs `json:"gpus,omitempty"`
	NICSpeedMinMbps int         `json:"nic_speed_min_mbps,omitempty" yaml:"nicSpeedMinMbps"`
	CPU             *ExpectCPU  `json:"cpu,omitempty"`
	MemoryMin       string      `json:"memory_min,omitempty" yaml:"memoryMin"`
	Pos             Pos         `json:"-"`
}

// Lifecycle holds the site's lifecycle settings. Absent fields leave the
// engine's and the driver's own defaults.
type Lifecycle struct {
	// Erase is what a release does to the disks of the site's nodes
	// (none | quick | secure); a host profile or node overrides it.
	Erase string `json:"erase,omitempty" enum:"none|quick|secure"`
	// Destructive is what a design from the followed git branch does when
	// its plan has destructive actions (releases, redeploys) for the
	// site's nodes: hold (the default) keeps it until an operator
	// approves its commit; apply applies it as any other commit. The
	// policy read is the current design's, never the incoming commit's.
	Destructive string `json:"destructive,omitempty" enum:"hold|apply"`
	// CommissionRetries: how many times a failed commissioning is
	// started again before the node fails.
	CommissionRetries *int `json:"commission_retries,omitempty" yaml:"commissionRetries"`
	// DeployRetries: how many times a failed deployment is released and
	// deployed again before the node fails.
	DeployRetries *int `json:"deploy_retries,omitempty" yaml:"deployRetries"`
	// Timeouts per workflow stage (Go durations: 40m, 1h30m).
	Timeouts map[string]string `json:"timeouts,omitempty"`
	// Baseline: how hardware profiles' baselines are applied
	// (baseline.go).
	Baseline BaselinePolicy `json:"baseline,omitzero"`

	Pos                  Pos            `json:"-"`
	CommissionRetriesPos Pos            `json:"-" pos:"commissionRetries"`
	DeployRetriesPos     Pos            `json:"-" pos:"deployRetries"`
	TimeoutsPos          Pos            `json:"-" pos:"timeouts"`
	TimeoutKeys          map[string]Pos `json:"-" pos:"timeouts.*"`
}

// DNSConfig names DNS servers and search domains.
type DNSConfig struct {
	Servers    []string `json:"servers,omitempty"`
	Search     []string `json:"search,omitempty"`
	ServersPos Pos      `json:"-" pos:"servers"`
}

// NTPConfig names NTP servers.
type NTPConfig struct {
	Servers []string `json:"servers,omitempty"`
}

// DriverNames selects the driver of each kind.
type DriverNames struct {
	Server  string `json:"server"`
	OOB     string `json:"oob"`
	Network string `json:"network"`

	NetworkPos Pos `json:"-" pos:"network"`
}

// MAASConfig tells how to reach MAAS. APIKey is a secret reference.
type MAASConfig struct {
	URL    string `json:"url,omitempty"`
	APIKey string `json:"api_key,omitempty" yaml:"apiKey"`
	Pos    Pos    `json:"-" pos:"apiKey"`
}

// IntrospectionConfig is the base URL nodes use to reach the introspection API.
type IntrospectionConfig struct {
	URL string `json:"url,omitempty"`
}

// SiteDefaults apply to every node.
type SiteDefaults struct {
	Platform       Platform `json:"platform,omitzero"`
	HostProfile    string   `json:"host_profile,omitempty" yaml:"hostProfile"`
	HostProfilePos Pos      `json:"-" pos:"hostProfile"`
}

// Network is an L3 network.
type Network struct {
	Metadata ObjectMeta  `json:"metadata"`
	Spec     NetworkSpec `json:"spec"`
}

// NetworkSpec describes one network.
type NetworkSpec struct {
	CIDR    string         `json:"cidr" required:"true"`
	VLAN    int            `json:"vlan,omitempty"`
	MTU     int            `json:"mtu"`
	Gateway string         `json:"gateway,omitempty"`
	DNS     NetworkDNS     `json:"dns,omitzero"`
	Ranges  []AddressRange `json:"ranges,omitempty"`
	Routes  []Route        `json:"routes,omitempty"`
	// SwitchVLAN is the VLAN the switches carry an untagged network on
	// (a tagged network's is its vlan); needed with a fabric.
	SwitchVLAN int `json:"switch_vlan,omitempty" yaml:"switchVlan"`

	Pos           Pos `json:"-"`
	SwitchVLANPos Pos `json:"-" pos:"switchVlan"`
	CIDRPos       Pos `json:"-" pos:"cidr"`
	VLANPos       Pos `json:"-" pos:"vlan"`
	MTUPos        Pos `json:"-" pos:"mtu"`
	GatewayPos    Pos `json:"-" pos:"gateway"`
}

// NetworkDNS is per-network DNS, used when the network is a node's primary one.
type NetworkDNS struct {
	Domain     string   `json:"domain,omitempty"`
	Servers    []string `json:"servers,omitempty"`
	ServersPos Pos      `json:"-" pos:"servers"`
}

// AddressRange is a range of addresses reserved for a purpose.
type AddressRange struct {
	Type  string `json:"type" enum:"static|dhcp|reserved" required:"true"`
	Start string `json:"start" required:"true"`
	End   string `json:"end" required:"true"`
	Pos   Pos    `json:"-"`
}

// Route is a static route.
type Route struct {
	To     string `json:"to" required:"true"`
	Via    string `json:"via" required:"true"`
	Metric int    `json:"metric,omitempty"`
	Pos    Pos    `json:"-"`
}

// NetworkLink is a physical link or bond and the networks it carries.
type NetworkLink struct {
	Metadata ObjectMeta      `json:"metadata"`
	Spec     NetworkLinkSpec `json:"spec"`
}

// NetworkLinkSpec describes a link.
type NetworkLinkSpec struct {
	Bonding         Bonding  `json:"bonding"`
	MTU             int      `json:"mtu"`
	Trunking        Trunking `json:"trunking"`
	AllowedNetworks []string `json:"allowed_networks,omitempty" yaml:"allowedNetworks"`

	Pos                Pos `json:"-"`
	MTUPos             Pos `json:"-" pos:"mtu"`
	AllowedNetworksPos Pos `json:"-" pos:"allowedNetworks"`
}

// Bonding configures a bond.
type Bonding struct {
	Mode      string `json:"mode" enum:"disabled|802.3ad|active-backup|balance-rr"`
	Hash      string `json:"hash,omitempty"`
	LACPRate  string `json:"lacp_rate,omitempty" yaml:"lacpRate" enum:"fast|slow"`
	MIIMon    int    `json:"miimon,omitempty"`
	UpDelay   int    `json:"updelay,omitempty"`
	DownDelay int    `json:"downdelay,omitempty"`
	Pos       Pos    `json:"-"`
}

// Trunking configures 802.1q tagging.
type Trunking struct {
	Mode          string `json:"mode" enum:"disabled|802.1q"`
	NativeNetwork string `json:"native_network,omitempty" yaml:"nativeNetwork"`
	Pos           Pos    `json:"-"`
}

// HardwareProfile is a hardware definition.
type HardwareProfile struct {
	Metadata ObjectMeta          `json:"metadata"`
	Spec     HardwareProfileSpec `json:"spec"`
}

// HardwareProfileSpec tells how to reach, boot and name a model of server.
type HardwareProfileSpec struct {
	Vendor        string                 `json:"vendor,omitempty"`
	Model         string                 `json:"model,omitempty"`
	BootMode      string                 `json:"boot_mode" yaml:"bootMode" enum:"uefi|bios"`
	OOB           HardwareOOB            `json:"oob"`
	PXE           PXEConfig              `json:"pxe"`
	DeviceAliases map[string]DeviceAlias `json:"device_aliases,omitempty" yaml:"deviceAliases"`
	// Expect is what a machine of this model must have; the as-built
	// stage checks it against the inventory commissioning found.
	Expect *HardwareExpect `json:"expect,omitempty"`
	// BIOS are firmware settings the engine applies through the OOB
	// driver while preparing a node (bios.go); nil when none.
	BIOS *BIOSSettings `json:"bios,omitempty"`
	// Firmware is the firmware baseline: the version each component of
	// the model must run and the image that installs it (baseline.go).
	Firmware []FirmwareBaseline `json:"firmware,omitempty"`
	// RAID is the volumes the model's RAID controller must have.
	RAID *RAIDBaseline `json:"raid,omitempty"`
	// VirtualMedia, when set, boots the model's machines from this ISO as
	// a virtual CD instead of PXE (Redfish VirtualMedia).
	VirtualMedia *VirtualMediaBoot `json:"virtual_media,omitempty" yaml:"virtualMedia"`
	// Architecture is the machines' CPU architecture, as the provisioner
	// names it; "" is amd64 (Arch). Every Image its nodes deploy must be
	// of it.
	Architecture string `json:"architecture,omitempty" enum:"amd64|arm64|ppc64el|s390x"`
	Pos          Pos    `json:"-"`

	ArchitecturePos Pos `json:"-" pos:"architecture"`
}

// HardwareExpect is a hardware profile's expectation of its machines.
// Every part is optional; model fields are regular expressions matched
// against what commissioning reported.
type HardwareExpect struct {
	CPU       *ExpectCPU            `json:"cpu,omitempty"`
	MemoryMin string                `json:"memory_min,omitempty" yaml:"memoryMin"` // a size, e.g. 512gi
	GPUs      *ExpectGPUs           `json:"gpus,omitempty"`
	NICs      map[string]ExpectNIC  `json:"nics,omitempty"`  // by device alias
	Disks     map[string]ExpectDisk `json:"disks,omitempty"` // by device alias
	Firmware  *ExpectFirmware       `json:"firmware,omitempty"`
	// LLDP: every NIC a node's cabling names must see that switch port as
	// its LLDP neighbour.
	LLDP bool `json:"lldp,omitempty"`
	Pos  Pos  `json:"-"`

	MemoryMinPos Pos `json:"-" pos:"memoryMin"`
	LLDPPos      Pos `json:"-" pos:"lldp"`
}

// ExpectCPU: logical CPUs at least Count, model matching Model.
type ExpectCPU struct {
	Count int    `json:"count,omitempty"`
	Model string `json:"model,omitempty"`
	Pos   Pos    `json:"-"`
}

// ExpectGPUs: exactly Count GPUs whose model matches Model; Addresses,
// when given, are their PCI addresses (the board's GPU slots), so that a
// missing GPU is named by its slot.
type ExpectGPUs struct {
	Count     int      `json:"count"`
	Model     string   `json:"model,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
	Pos       Pos      `json:"-"`
}

// ExpectNIC is one device alias's NIC: at least SpeedMinMbps, its driver.
type ExpectNIC struct {
	SpeedMinMbps int    `json:"speed_min_mbps,omitempty" yaml:"speedMinMbps"`
	Driver       string `json:"driver,omitempty"`
	Pos          Pos    `json:"-"`
}

// ExpectDisk is one device alias's disk: at least SizeMin, its model.
type ExpectDisk struct {
	SizeMin string `json:"size_min,omitempty" yaml:"sizeMin"`
	Model   string `json:"model,omitempty"`
	Pos     Pos    `json:"-"`
}

// ExpectFirmware holds minimum versions (compared field by field as
// dotted numbers).
type ExpectFirmware struct {
	BIOSMin string `json:"bios_min,omitempty" yaml:"biosMin"`
	BMCMin  string `json:"bmc_min,omitempty" yaml:"bmcMin"`
	Pos     Pos    `json:"-"`
}

// Cable is where a node's NIC is cabled: a switch (its LLDP system name)
// and port.
type Cable struct {
	Switch string `json:"switch" required:"true"`
	Port   string `json:"port" required:"true"`
	Pos    Pos    `json:"-"`
}

// Constraints choose the machine of a node that is not pinned (no boot
// MAC): MAAS allocates any machine satisfying them.
type Constraints struct {
	Zone      string   `json:"zone,omitempty"`
	Pool      string   `json:"pool,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	MinCPU    int      `json:"min_cpu,omitempty" yaml:"minCpu"`
	MinMemory string   `json:"min_memory,omitempty" yaml:"minMemory"` // a size, e.g. 256gi
	Pos       Pos      `json:"-"`

	MinMemoryPos Pos `json:"-" pos:"minMemory"`
	TagsPos      Pos `json:"-" pos:"tags"`
}

// HardwareOOB is the out-of-band access method of a hardware model.
type HardwareOOB struct {
	Type        string `json:"type"`
	Protocol    string `json:"protocol" enum:"lanplus|lan"`
	Port        int    `json:"port"`
	CipherSuite int    `json:"cipher_suite" yaml:"cipherSuite"`
	Privilege   string `json:"privilege" enum:"administrator|operator"`
	// Fallback is a second method to the same BMC, used when this one
	// does not answer (oob_fallback.go); nil when none.
	Fallback *OOBFallback `json:"fallback,omitempty"`
	// CAFile is the PEM file of the CA that signs the BMCs' HTTPS
	// certificates (redfish); Insecure skips the check (a lab, a BMC
	// with its factory certificate): both for HTTPS types only.
	CAFile   string `json:"ca_file,omitempty" yaml:"caFile"`
	Insecure bool   `json:"insecure,omitempty"`

	Pos            Pos `json:"-"`
	PortPos        Pos `json:"-" pos:"port"`
	CipherSuitePos Pos `json:"-" pos:"cipherSuite"`
}

// PXEConfig tells which device PXE boots.
type PXEConfig struct {
	Interface  string `json:"interface,omitempty"`
	Persistent bool   `json:"persistent"`
	Pos        Pos    `json:"-" pos:"interface"`
}

// DeviceAlias is a stable name for a NIC or disk.
type DeviceAlias struct {
	// Bus bay: a physical drive behind the RAID controller, addressed
	// by its bay as the controller numbers it (a RAID volume's member).
	Bus     string `json:"bus" enum:"pci|scsi|nvme|bay" required:"true"`
	Address string `json:"address" required:"true"`
	Pos     Pos    `json:"-"`
}

// HostProfile is a named set of host settings, possibly with a parent.
type HostProfile struct {
	Metadata ObjectMeta      `json:"metadata"`
	Spec     HostProfileSpec `json:"spec"`
}

// HostProfileSpec is a host profile; after resolution its Parent is the
// profile it was resolved from and HostSpec holds the whole chain's values.
type HostProfileSpec struct {
	Parent string `json:"parent,omitempty"`
	HostSpec
	OOB       HostOOB `json:"oob,omitzero"`
	ParentPos Pos     `json:"-" pos:"parent"`
}

// HostSpec holds the fields shared by host profiles and nodes.
type HostSpec struct {
	// Site names the Site the node belongs to (required when the design
	// has several; sites.go).
	Site            string               `json:"site,omitempty"`
	HardwareProfile string               `json:"hardware_profile,omitempty" yaml:"hardwareProfile"`
	PrimaryNetwork  string               `json:"primary_network,omitempty" yaml:"primaryNetwork"`
	Interfaces      map[string]Interface `json:"interfaces,omitempty"`
	Storage         Storage              `json:"storage,omitzero"`
	Platform        Platform             `json:"platform,omitzero"`
	Tags            []string             `json:"tags,omitempty"`
	OwnerData       map[string]string    `json:"owner_data,omitempty" yaml:"ownerData"`
	// Erase overrides the Site's lifecycle.erase for the nodes of a
	// profile, or for one node.
	Erase string `json:"erase,omitempty" enum:"none|quick|secure"`
	// SiteProfile names a profile of the node's site record (server
	// state, not the design's: an onboarding chooses the host profile
	// naming the site profile it is given).
	SiteProfile string `json:"site_profile,omitempty" yaml:"siteProfile"`

	Pos                Pos            `json:"-"`
	SitePos            Pos            `json:"-" pos:"site"`
	HardwareProfilePos Pos            `json:"-" pos:"hardwareProfile"`
	PrimaryNetworkPos  Pos            `json:"-" pos:"primaryNetwork"`
	OwnerDataPos       Pos            `json:"-" pos:"ownerData"`
	OwnerDataKeys      map[string]Pos `json:"-" pos:"ownerData.*"`
}

// HostOOB is the out-of-band part a host profile may set.
type HostOOB struct {
	Credentials *Credentials `json:"credentials,omitempty"`
}

// Credentials are BMC credentials. Password is a secret reference.
type Credentials struct {
	Username string `json:"username,omitempty" required:"true"`
	Password string `json:"password,omitempty" required:"true"`
	Pos      Pos    `json:"-" pos:"password"`
}

// Interface is one host interface: a link, its devices and its networks.
type Interface struct {
	Link     string   `json:"link" required:"true"`
	Devices  []string `json:"devices,omitempty"`
	Networks []string `json:"networks,omitempty"`
	Pos      Pos      `json:"-"`
}

// Storage is a host's disk layout.
type Storage struct {
	Devices      map[string]StorageDevice `json:"devices,omitempty"`
	VolumeGroups map[string]VolumeGroup   `json:"volume_groups,omitempty" yaml:"volumeGroups"`
}

// StorageDevice is a disk: either partitioned or a whole-disk LVM PV.
type StorageDevice struct {
	Partitions  map[string]Partition `json:"partitions,omitempty"`
	VolumeGroup string               `json:"volume_group,omitempty" yaml:"volumeGroup"`
	Pos         Pos                  `json:"-"`
}

// Partition is one partition of a device.
type Partition struct {
	Size        string      `json:"size,omitempty" required:"true"`
	Bootable    bool        `json:"bootable,omitempty"`
	Filesystem  *Filesystem `json:"filesystem,omitempty"`
	VolumeGroup string      `json:"volume_group,omitempty" yaml:"volumeGroup"`
	Pos         Pos         `json:"-"`
	SizePos     Pos         `json:"-" pos:"size"`
}

// Filesystem formats and mounts a partition or logical volume.
type Filesystem struct {
	FSType     string `json:"fstype,omitempty"`
	Mountpoint string `json:"mountpoint,omitempty"`
	Options    string `json:"options,omitempty"`
	Label      string `json:"label,omitempty"`
	Pos        Pos    `json:"-" pos:"mountpoint"`
}

// VolumeGroup is an LVM volume group.
type VolumeGroup struct {
	LogicalVolumes map[string]LogicalVolume `json:"logical_volumes,omitempty" yaml:"logicalVolumes"`
	Pos            Pos                      `json:"-"`
}

// LogicalVolume is an LVM logical volume.
type LogicalVolume struct {
	Size       string      `json:"size,omitempty" required:"true"`
	Filesystem *Filesystem `json:"filesystem,omitempty"`
	Pos        Pos         `json:"-"`
	SizePos    Pos         `json:"-" pos:"size"`
}

// Platform selects the OS image and kernel.
type Platform struct {
	Image        string            `json:"image,omitempty"`
	Kernel       string            `json:"kernel,omitempty"`
	KernelParams map[string]string `json:"kernel_params,omitempty" yaml:"kernelParams"`

	// ImagePos is where image was written (a profile, a node, the Site
	// defaults): the image rule's findings point there.
	ImagePos Pos `json:"-" pos:"image"`
}

// Node is one server, resolved over its host profile chain.
type Node struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     NodeSpec   `json:"spec"`
	// Chain is the host profile chain, root ancestor first.
	Chain []string `json:"-"`
	// SiteName is the Site the node belongs to (its spec.site, else the
	// design's only Site), set by Build and DecodeRevision.
	SiteName string `json:"-"`
}

// NodeSpec is a node's resolved spec.
type NodeSpec struct {
	HostProfile string `json:"host_profile" yaml:"hostProfile"`
	HostSpec
	OOB        NodeOOB   `json:"oob,omitzero"`
	Addressing []Address `json:"addressing"`
	BootMAC    string    `json:"boot_mac,omitempty" yaml:"bootMac"`
	Rack       string    `json:"rack,omitempty"`
	// Cabling names the switch port each NIC (by device alias) is cabled
	// to: the lab's LLDP neighbours, and the as-built check's expectation.
	Cabling map[string]Cable `json:"cabling,omitempty"`
	// Constraints select the machine of a node without a boot MAC.
	Constraints *Constraints `json:"constraints,omitempty"`
	// Hardware is the node's hardware profile, attached after resolution.
	Hardware *HardwareProfileSpec `json:"hardware,omitempty" design:"computed"`

	HostProfilePos Pos `json:"-" pos:"hostProfile"`
	BootMACPos     Pos `json:"-" pos:"bootMac"`
	AddressingPos  Pos `json:"-" pos:"addressing"`
	CablingPos     Pos `json:"-" pos:"cabling"`
}

// NodeOOB is a node's BMC.
type NodeOOB struct {
	Address     string       `json:"address,omitempty"`
	Port        int          `json:"port,omitempty"`
	Credentials *Credentials `json:"credentials,omitempty"`
	// Fingerprint pins the BMC's HTTPS certificate: its SHA-256, hex
	// (colons allowed). SystemID names the Redfish system when the BMC
	// manages several ("" for the only one).
	Fingerprint string `json:"fingerprint,omitempty"`
	SystemID    string `json:"system_id,omitempty" yaml:"systemId"`
	Pos         Pos    `json:"-"`
	AddressPos  Pos    `json:"-" pos:"address"`
	PortPos     Pos    `json:"-" pos:"port"`
}

// Address is a node's address on one network: an IP or "dhcp".
type Address struct {
	Network string `json:"network" required:"true"`
	Address string `json:"address" required:"true"`
	Pos     Pos    `json:"-"`
}

// BootAction delivers assets to nodes during bootstrap.
type BootAction struct {
	Metadata ObjectMeta     `json:"metadata"`
	Spec     BootActionSpec `json:"spec"`
}

// BootActionSpec selects nodes and lists the assets.
type BootActionSpec struct {
	NodeFilter *NodeFilter `json:"node_filter,omitempty" yaml:"nodeFilter"`
	Signaling  bool        `json:"signaling"`
	Assets     []Asset     `json:"assets,omitempty"`
	Pos        Pos         `json:"-"`
}

// NodeFilter selects nodes; every given criterion must match.
type NodeFilter struct {
	Names  []string          `json:"names,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Tags   []string          `json:"tags,omitempty"`
	Racks  []string          `json:"racks,omitempty"`
	// Sites selects the nodes of these Sites (sites.go).
	Sites []string `json:"sites,omitempty"`
	Pos   Pos      `json:"-"`
}

// Asset is one file, unit or package list delivered to a node.
type Asset struct {
	Path        string `json:"path" required:"true"`
	Type        string `json:"type" enum:"file|unit|pkgList" required:"true"`
	Permissions string `json:"permissions,omitempty"`
	Data        string `json:"data,omitempty"`
	Template    string `json:"template,omitempty"`
	Pos         Pos    `json:"-"`
	TemplatePos Pos    `json:"-" pos:"template"`
}
