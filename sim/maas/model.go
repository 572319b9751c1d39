package maas

import (
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// Hardware is what a simulated machine really has; MAAS learns it at
// enlistment (MACs) and commissioning (everything else). Zero fields
// take the lab's defaults when rendered (see hwdefaults.go).
type Hardware struct {
	Arch      string // e.g. "amd64/generic"
	CPUs      int    // logical CPUs (threads, all sockets): MAAS's cpu_count
	MemoryMiB int
	Vendor    string // DMI system vendor
	Product   string // DMI system product
	Serial    string // DMI system serial
	NICs      []NIC
	Disks     []Disk

	CPUModel    string // e.g. "Intel(R) Xeon(R) Gold 6430"
	CPUSockets  int    // 0: 1
	CPUCores    int    // physical cores, all sockets (0: CPUs/2)
	CPUSpeedMHz int    // MAAS's cpu_speed (0: 2400)

	BIOSVendor  string
	BIOSVersion string // mainboard_firmware_version
	BIOSDate    string // mainboard_firmware_date, MM/DD/YYYY as DMI has it
	BMCVersion  string // the BMC's firmware revision (IPMI Get Device ID)

	GPUs []PCIDevice // GPUs and other accelerators

	// Zone, Pool and Tags place the machine in MAAS when it enlists (an
	// administrator's doing in a real MAAS; the lab's fixture).
	Zone string
	Pool string
	Tags []string
}

// PCIDevice is a PCI device besides NICs and disks: a GPU.
type PCIDevice struct {
	PCI       string // 0000:ca:00.0
	Vendor    string // NVIDIA Corporation
	Product   string // GH100 [H100 SXM5 80GB]
	VendorID  string // 10de
	ProductID string // 2330
	Driver    string // nvidia
	NUMANode  int
}

// NIC is a network card.
type NIC struct {
	MAC      string
	PCI      string // e.g. "0000:3b:00.0"
	Name     string // the kernel name commissioning finds, e.g. "ens3f0"
	Network  string // the lab network (fabric) it plugs into
	Vendor   string
	Product  string
	Driver   string // kernel driver, e.g. ice
	Firmware string // firmware version as ethtool reports it
	// SpeedMbps is the negotiated link speed (MAAS's link_speed); MaxMbps
	// the card's fastest mode (interface_speed). 0: the lab's default.
	SpeedMbps int
	MaxMbps   int
	LinkDown  bool // no carrier (link_connected false)
	NUMANode  int
	Alias     string // the design's device alias (the lab's; MAAS never sees it)
	// Neighbor is the switch port LLDP hears on this NIC (nil: none).
	Neighbor *LLDPNeighbor
}

// LLDPNeighbor is what lldpd reports of the other end of a cable.
type LLDPNeighbor struct {
	ChassisID string // the switch's MAC
	SysName   string // the switch's LLDP system name
	PortID    string // e.g. Ethernet12 (ifname)
	PortDescr string
}

// Disk is a block device.
type Disk struct {
	Name       string // kernel name, e.g. "sda", "nvme0n1"
	Bus        string // pci | scsi | nvme
	Addr       string // bus address, e.g. "0000:5e:00.0" or "2:0:0:0"
	Size       int64  // bytes
	Model      string
	Serial     string
	Vendor     string
	Firmware   string
	Rotational bool
	RPM        int    // a rotational disk's speed (0: 7200)
	Alias      string // the design's device alias (the lab's; MAAS never sees it)
}

// PowerParams tell MAAS how to reach a machine's BMC.
type PowerParams map[string]string

// machine is MAAS's record of a machine.
type machine struct {
	SystemID string
	// Commission is what the last commission asked for (scripts_api.go).
	Commission    CommissionRequest
	Hostname      string
	Domain        string
	Status        int
	PrevStatus    int
	StatusMessage string
	Owner         string
	AgentName     string
	Comment       string
	OwnerData     map[string]string
	Zone          string
	Pool          string
	Arch          string
	CPUCount      int
	MemoryMiB     int
	PowerType     string
	PowerParams   PowerParams
	PowerState    string // on | off | unknown | error
	OSystem       string
	DistroSeries  string
	HWEKernel     string
	ImageSHA256   string // the deployed uploaded image's set's SHA-256 (bootres_deploy.go)
	UserData      []byte
	Tags          []string
	Locked        bool
	Netboot       bool
	Description   string
	Interfaces    []*iface
	BlockDevices  []*blockDevice
	VolumeGroups  []*volumeGroup
	BootIfaceID   int
	BootDiskID    int // set_boot_disk; 0: the first physical disk of 512 MiB or more
	StorageLayout string
	Created       time.Time
	Updated       time.Time

	hw            *Hardware // set for machines the lab simulates
	commissioned  bool
	failCommLeft  int
	failDeployLft int
	failTests     int           // testings failed so far (MachineFaults.FailTesting)
	failRescues   int           // rescue mode entries failed so far (MachineFaults.FailRescue)
	failErases    int           // disk erasures failed so far (MachineFaults.FailErase)
	lastDeployBad bool          // the last deployment ended in Failed deployment (DuplicateDeploys)
	timer         *time.Timer   // the running phase
	phase         int           // generation counter: a stale timer does nothing
	nodeDevices   []*nodeDevice // PCI inventory (GET /nodes/{system_id}/devices/)

	rev       uint64       // bumped by every request on the machine and every phase end (listing.go)
	rendered  listed       // the machine's JSON as the last listing rendered it
	powerJSON listed       // its entry in the power_parameters op's answer
	parts     machineParts // its interfaces' and disks' JSON as last rendered (render_parts.go)
	// renderMu guards rendered and parts among the renderings under the
	// read lock (shared_reads.go); holding the lock alone needs no more.
	renderMu sync.Mutex
	macSet   macSet       // its MACs for a scan of every machine (machineMACs)
	ipAddrs  []netip.Addr // its links' addresses as the IP index holds them (ipindex.go)
	ipDirty  bool         // on s.ipDirty
	idxMACs  []string     // its MACs (lower case) as the MAC index holds them
	idxHost  string       // its hostname as the hostname index holds it
}

// iface is a machine interface.
type iface struct {
	ID      int
	Name    string
	Type    string // physical | bond | vlan | bridge
	MAC     string
	VLANID  int
	Parents []string
	Enabled bool
	MTU     int
	Params  map[string]any
	Links   []*link
	Tags    []string
	PCI     string
	Vendor  string
	Product string
}

// link is an address configuration of an interface on a subnet.
type link struct {
	ID       int
	Mode     string // auto | dhcp | static | link_up
	SubnetID int    // 0 for link_up without subnet
	IP       string
	Gateway  bool

	// IP parsed, and the IP it was parsed from (parsedIP).
	addr   netip.Addr
	addrOK bool
	addrOf string
}

// parsedIP is parseAddr(l.IP), parsed once per value of IP: ipInUse and
// assignedIPs look at every link of every machine.
func (l *link) parsedIP() (netip.Addr, bool) {
	if l.IP == "" {
		return netip.Addr{}, false
	}
	if l.addrOf != l.IP {
		l.addr, l.addrOK = parseAddr(l.IP)
		l.addrOf = l.IP
	}
	return l.addr, l.addrOK
}

// filesystem on a block device or partition.
type filesystem struct {
	FSType       string
	Label        string
	UUID         string
	MountPoint   string
	MountOptions string
}

// blockDevice is a physical disk or a logical volume (Type virtual).
type blockDevice struct {
	ID         int
	Name       string
	Type       string // physical | virtual
	Model      string
	Serial     string
	Size       int64
	BlockSize  int
	IDPath     string
	Tags       []string
	Partitions []*partition
	FS         *filesystem
	PCI        string
	Bus        string
	VGID       int // a logical volume's group, or the group this whole disk is a PV of
	PTType     string
	UUID       string
	Firmware   string
}

// partition of a block device.
type partition struct {
	ID       int
	UUID     string
	Size     int64
	Bootable bool
	FS       *filesystem
	VGID     int // the volume group this partition is a PV of
	Index    int
	Tags     []string
}

// volumeGroup is an LVM volume group.
type volumeGroup struct {
	ID   int
	Name string
	UUID string
}

// fabric, vlan, subnet, ipRange, space, staticRoute, zone, pool, domain, tag
// are the site objects.
type fabric struct {
	ID        int
	Name      string
	ClassType string
}

type vlan struct {
	ID       int
	FabricID int
	VID      int
	Name     string
	MTU      int
	DHCPOn   bool
	Space    string
	Primary  string // primary rack controller system_id
}

type subnet struct {
	ID          int
	Name        string
	CIDR        string
	VLANID      int
	GatewayIP   string
	DNSServers  []string
	Space       string
	Managed     bool
	AllowDNS    bool
	AllowProxy  bool
	RDNSMode    int
	Description string
}

type ipRange struct {
	ID       int
	Type     string // dynamic | reserved
	StartIP  string
	EndIP    string
	SubnetID int
	Comment  string
	User     string
}

type space struct {
	ID   int
	Name string
}

type staticRoute struct {
	ID          int
	SourceID    int
	Destination int
	GatewayIP   string
	Metric      int
}

type zone struct {
	ID          int
	Name        string
	Description string
}

type pool struct {
	ID          int
	Name        string
	Description string
}

type domain struct {
	ID            int
	Name          string
	Authoritative bool
	TTL           *int
}

type tag struct {
	Name       string
	Comment    string
	Definition string
	KernelOpts string
}

type sshKey struct {
	ID  int
	Key string
}

// defaultBootResources are what a region that synced Ubuntu 20.04, 22.04
// and 24.04 lists, as MAAS does: one resource per image and kernel, its
// architecture naming the kernel (amd64/ga-22.04 is the release's own
// kernel, amd64/hwe-22.04 the hardware enablement one); subarches lists
// the compatibility levels the kernel satisfies.
func defaultBootResources(nextID func() int) []*bootResource {
	var out []*bootResource
	levels := "generic,hwe-p,hwe-q,hwe-r,hwe-s,hwe-t,hwe-u,hwe-v,hwe-w,ga-16.04,ga-16.10,ga-17.04,ga-17.10,ga-18.04,ga-18.10,ga-19.04,ga-19.10,ga-20.04"
	for _, r := range []struct{ series, version string }{{"focal", "20.04"}, {"jammy", "22.04"}, {"noble", "24.04"}} {
		if r.version != "20.04" {
			levels += ",ga-" + r.version
		}
		for _, k := range []string{"ga-", "hwe-"} {
			entry, _ := catalogueOf("ubuntu", r.series)
			out = append(out, &bootResource{ID: nextID(), Type: "Synced", Name: "ubuntu/" + r.series,
				Architecture: "amd64/" + k + r.version, Subarches: levels, Sets: []*bootSet{syncedSet(nextID, entry, true)}})
		}
	}
	return out
}

// newSystemID returns a MAAS-like system ID (six lower-case letters and digits).
func (s *Server) newSystemID() string {
	const alphabet = "abcdefghijkmnpqrstuvwxy3456789"
	for {
		b := make([]byte, 6)
		for i := range b {
			b[i] = alphabet[s.rnd.Intn(len(alphabet))]
		}
		id := string(b)
		if s.machines[id] == nil {
			return id
		}
	}
}

// nextID hands out object IDs.
func (s *Server) nextID() int {
	s.lastID++
	return s.lastID
}

func (m *machine) fqdn() string { return fmt.Sprintf("%s.%s", m.Hostname, m.Domain) }
