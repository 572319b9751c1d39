package maas

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/juju/mgo/v2/bson"
	segjson "github.com/segmentio/encoding/json"
	"github.com/slipway-dev/slipway/drivers"
)

// Inventory reads what commissioning found on the machine, once, after it
// (never in the status poll): the machine read (hardware_info, cpu_count,
// memory, interfaces with their vendor, firmware and link, physical block
// devices), the node devices (MAAS 3.x: GPUs with their PCI IDs and NUMA
// node) and the commissioning details (op=details, BSON: lshw XML for the
// system, BIOS, CPUs, accelerators, NIC drivers and disk bus addresses;
// lldpd XML for each NIC's switch port). It ties the node's NIC aliases
// (through the node devices or the details, as configuring does) and disk
// aliases to them. A NIC's Name is MAAS's name of it when read: right
// after commissioning, the kernel name (ApplyNetworking later renames only
// NICs that carry an interface on their own, never bond members).
func (d *Driver) Inventory(ctx context.Context, n drivers.Node) (drivers.Inventory, error) {
	if n.MachineID == "" {
		return drivers.Inventory{}, drivers.Errorf(drivers.Permanent, "maas: inventory of node %s: the node has no machine yet (identify it first)", n.Name)
	}
	rd, err := d.inventoryReads(ctx, n.MachineID)
	if err != nil {
		return drivers.Inventory{}, err
	}
	m := rd.m
	var devs []drivers.Device
	for _, in := range n.Interfaces {
		devs = append(devs, in.Devices...)
	}
	names, err := d.resolveFrom(ctx, m.SystemID, devs, false, rd.nds)
	if err != nil {
		return drivers.Inventory{}, err
	}
	alias := map[string]string{} // MAC or MAAS name → alias
	for a, r := range names {
		if p := findPhysical(m.Interfaces, r); p != nil {
			alias[strings.ToLower(p.MAC)] = a
		}
	}
	inv := drivers.Inventory{MachineID: m.SystemID, NICs: []drivers.NIC{}}
	for _, i := range m.Interfaces {
		if i.Type != "physical" {
			continue
		}
		mac := strings.ToLower(i.MAC)
		inv.NICs = append(inv.NICs, drivers.NIC{Alias: alias[mac], Name: i.Name, MAC: mac})
	}
	for a, r := range names {
		if _, ok := inv.NIC(a); !ok {
			return drivers.Inventory{}, drivers.Errorf(drivers.Permanent, "maas: machine %s has no physical interface %s for device %s of node %s", m.SystemID, r.Name, a, n.Name)
		}
	}
	if err := d.hardwareFacts(ctx, n, &inv, rd); err != nil {
		return drivers.Inventory{}, err
	}
	return inv, nil
}

// mHardware is the part of a machine read that inventory takes.
type mHardware struct {
	CPUCount     int               `json:"cpu_count"`
	Memory       int64             `json:"memory"` // MiB
	HardwareInfo map[string]string `json:"hardware_info"`
	Interfaces   []hwInterface     `json:"interface_set"`
	Disks        []hwDisk          `json:"physicalblockdevice_set"`
}

// hwInterface is an interface of a machine read, as inventory takes it.
type hwInterface struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	MAC      string  `json:"mac_address"`
	Vendor   *string `json:"vendor"`
	Product  *string `json:"product"`
	Firmware *string `json:"firmware_version"`
	// link_connected is absent before MAAS 2.7: nil, unknown.
	LinkConnected *bool `json:"link_connected"`
	LinkSpeed     int   `json:"link_speed"` // Mbit/s
}

// hwDisk is a physical block device of a machine read.
type hwDisk struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Model  *string  `json:"model"`
	Serial *string  `json:"serial"`
	Size   int64    `json:"size"`
	IDPath *string  `json:"id_path"`
	Tags   []string `json:"tags"` // rotary, ssd, removable
}

// hwDevice is a node device (GET nodes/{id}/devices/, MAAS 3.x).
type hwDevice struct {
	HardwareType     int    `json:"hardware_type"`
	HardwareTypeName string `json:"hardware_type_name"`
	NUMANode         *int   `json:"numa_node"`
	VendorID         string `json:"vendor_id"`
	ProductID        string `json:"product_id"`
	VendorName       string `json:"vendor_name"`
	ProductName      string `json:"product_name"`
	Driver           string `json:"commissioning_driver"`
	PCIAddress       string `json:"pci_address"`
}

// hwTypeGPU is MAAS's hardware type of a GPU node device.
const hwTypeGPU = 5

// maxDetailsBytes bounds the commissioning details read (BSON of the lshw
// and lldp documents, and of the other commissioning outputs).
const maxDetailsBytes = 16 << 20

// Bounds of the machine and node device reads of Inventory.
const (
	maxMachineReadBytes = 8 << 20
	maxNodeDevices      = 4096
)

// invReads are the machine and its node devices as Inventory reads
// them, once each: decoded for the hardware facts and for what resolving
// the design's device aliases and the cache take.
type invReads struct {
	m     *mMachine
	hw    mHardware
	ndevs []hwDevice
	nds   []nodeDevice
}

// inventoryReads reads the machine and its node devices (MAAS 2.x has
// none: 404) in one request each, decodes each once, and keeps both in
// the read cache: the configure stage that follows reads neither again.
func (d *Driver) inventoryReads(ctx context.Context, id string) (invReads, error) {
	var rd invReads
	since := d.c.cache.begin()
	raw, read, at, kept := d.c.cache.takeJSON(id) // the status poll's read (status_read.go)
	if !kept {
		read = since
		if err := d.c.callLimit(ctx, http.MethodGet, "machines/"+url.PathEscape(id)+"/", "", nil, (*json.RawMessage)(&raw), maxMachineReadBytes); err != nil {
			if isNotFound(err) {
				return rd, drivers.Errorf(drivers.Permanent, "maas: machine %s does not exist (deleted from MAAS?); identify the node again", id)
			}
			return rd, err
		}
	}
	var err error
	if rd.m, rd.hw, err = decodeMachineRead(raw); err != nil {
		return rd, drivers.Errorf(drivers.Permanent, "maas: machine %s: decode the machine read: %v", id, err)
	}
	if rd.m.SystemID != id {
		return rd, drivers.Errorf(drivers.Permanent, "maas: machine %s: MAAS answered machine %q", id, rd.m.SystemID)
	}
	if kept {
		d.c.cache.putReadAt(read, at, []mMachine{*rd.m}, 0)
	} else {
		d.c.cache.putMachines(read, []mMachine{*rd.m})
	}
	return rd, d.nodeDevicesRead(ctx, id, since, &rd)
}

// nodeDevicesRead reads the machine's node devices into rd and keeps
// them in the read cache.
func (d *Driver) nodeDevicesRead(ctx context.Context, id string, since uint64, rd *invReads) error {
	var raw json.RawMessage
	if err := d.c.callLimit(ctx, http.MethodGet, "nodes/"+id+"/devices/", "", nil, &raw, maxMachineReadBytes); err != nil && !isNotFound(err) {
		return err
	}
	if len(raw) > 0 {
		var err error
		if rd.nds, rd.ndevs, err = decodeDevicesRead(raw); err != nil {
			return drivers.Errorf(drivers.Permanent, "maas: machine %s: decode the node devices: %v", id, err)
		}
	}
	if rd.nds == nil { // none (MAAS 2.x): not to be read again
		rd.nds = []nodeDevice{}
	}
	if len(rd.ndevs) > maxNodeDevices {
		rd.ndevs, rd.nds = rd.ndevs[:maxNodeDevices], rd.nds[:maxNodeDevices]
	}
	d.c.cache.putDevices(since, id, rd.nds)
	return nil
}

// machineRead is a machine read decoded once into both what the driver
// keeps of it (mMachine) and what inventory takes (mHardware): each
// interface carries the fields of both.
type machineRead struct {
	mMachine
	CPUCount     int               `json:"cpu_count"`
	Memory       int64             `json:"memory"`
	HardwareInfo map[string]string `json:"hardware_info"`
	Disks        []hwDisk          `json:"physicalblockdevice_set"`
	Interfaces   []readInterface   `json:"interface_set"` // over mMachine's
}

// readInterface is an interface of a machine read: mInterface and the
// facts hwInterface takes besides.
type readInterface struct {
	mInterface
	Vendor        *string `json:"vendor"`
	Product       *string `json:"product"`
	Firmware      *string `json:"firmware_version"`
	LinkConnected *bool   `json:"link_connected"`
	LinkSpeed     int     `json:"link_speed"`
}

// decodeMachineRead decodes a machine read once into the machine and its
// hardware facts.
func decodeMachineRead(raw []byte) (*mMachine, mHardware, error) {
	var r machineRead
	if err := segjson.Unmarshal(raw, &r); err != nil {
		return nil, mHardware{}, err
	}
	m := r.mMachine
	hw := mHardware{CPUCount: r.CPUCount, Memory: r.Memory, HardwareInfo: r.HardwareInfo, Disks: r.Disks}
	if r.Interfaces != nil {
		m.Interfaces, hw.Interfaces = make([]mInterface, len(r.Interfaces)), make([]hwInterface, len(r.Interfaces))
	}
	for i, in := range r.Interfaces {
		m.Interfaces[i] = in.mInterface
		hw.Interfaces[i] = hwInterface{Name: in.Name, Type: in.Type, MAC: in.MAC, Vendor: in.Vendor, Product: in.Product,
			Firmware: in.Firmware, LinkConnected: in.LinkConnected, LinkSpeed: in.LinkSpeed}
	}
	return &m, hw, nil
}

// deviceRead is a node device decoded once into both views of it.
type deviceRead struct {
	hwDevice
	Interface *mInterface   `json:"physical_interface"`
	Disk      *mBlockDevice `json:"physical_blockdevice"`
}

// decodeDevicesRead decodes a node devices read once into what resolving
// aliases takes (nodeDevice) and inventory's facts (hwDevice).
func decodeDevicesRead(raw []byte) ([]nodeDevice, []hwDevice, error) {
	var rs []deviceRead
	if err := segjson.Unmarshal(raw, &rs); err != nil {
		return nil, nil, err
	}
	if rs == nil {
		return nil, nil, nil
	}
	nds, devs := make([]nodeDevice, len(rs)), make([]hwDevice, len(rs))
	for i, r := range rs {
		nds[i], devs[i] = nodeDevice{PCIAddress: r.PCIAddress, Interface: r.Interface, Disk: r.Disk}, r.hwDevice
	}
	return nds, devs, nil
}

// hardwareFacts fills the inventory's hardware facts beside its NICs.
func (d *Driver) hardwareFacts(ctx context.Context, n drivers.Node, inv *drivers.Inventory, rd invReads) error {
	id := inv.MachineID
	hw, ndevs := rd.hw, rd.ndevs
	facts, lldp, err := d.details(ctx, id)
	if err != nil {
		return err
	}
	systemFacts(inv, hw, facts)
	pciDev := map[string]hwDevice{}
	for _, nd := range ndevs {
		pciDev[strings.ToLower(nd.PCIAddress)] = nd
	}
	nicFacts(inv.NICs, hw.Interfaces, facts.NICs, lldp, pciDev)
	inv.GPUs = gpuFacts(facts.GPUs, ndevs, pciDev)
	diskAlias, err := d.diskAliases(ctx, id, n.Storage, rd.nds)
	if err != nil {
		return err
	}
	inv.Disks = diskFacts(hw.Disks, diskAlias, facts.DiskBus)
	return nil
}

// systemFacts fills the system, firmware, CPU and memory: the machine
// read's hardware_info first, else lshw's.
func systemFacts(inv *drivers.Inventory, hw mHardware, facts hwFacts) {
	hi := func(k string) string { return clean(bound(hw.HardwareInfo[k])) }
	inv.System = drivers.System{Vendor: or(hi("system_vendor"), facts.System.Vendor), Product: or(hi("system_product"), facts.System.Product),
		Serial: or(hi("system_serial"), facts.System.Serial)}
	inv.Firmware = drivers.Firmware{BIOSVendor: or(hi("mainboard_firmware_vendor"), facts.Firmware.BIOSVendor),
		BIOSVersion: or(hi("mainboard_firmware_version"), facts.Firmware.BIOSVersion), BIOSDate: or(hi("mainboard_firmware_date"), facts.Firmware.BIOSDate)}
	inv.CPU = facts.CPU
	inv.CPU.Model = or(hi("cpu_model"), inv.CPU.Model)
	if hw.CPUCount > 0 {
		inv.CPU.Threads = hw.CPUCount // what MAAS counted is what allocation matches
	}
	inv.MemoryMiB = max(hw.Memory, 0)
}

// nicFacts completes the NICs: MAAS's interface details, then lshw's
// driver and firmware, the LLDP neighbour by kernel name, and the node
// devices' driver where lshw has none.
func nicFacts(nics []drivers.NIC, ifaces []hwInterface, lshw []hwNIC, lldp map[string]drivers.Neighbor, pciDev map[string]hwDevice) {
	byMAC := map[string]*drivers.NIC{}
	for i := range nics {
		byMAC[nics[i].MAC] = &nics[i]
	}
	linkKnown := maasNICFacts(byMAC, ifaces)
	for _, h := range lshw {
		nic := byMAC[h.MAC]
		if nic == nil {
			continue
		}
		nic.PCIAddress, nic.Driver = h.PCI, h.Driver
		if !linkKnown[nic.MAC] {
			nic.LinkUp = h.Link == "yes" || nic.SpeedMbps > 0
		}
		nic.Vendor, nic.Product, nic.Firmware = or(nic.Vendor, h.Vendor), or(nic.Product, h.Product), or(nic.Firmware, h.Firmware)
		if nb, ok := lldp[h.Name]; ok {
			nic.Neighbor = &nb
		}
	}
	for i := range nics {
		nic := &nics[i]
		if nb, ok := lldp[nic.Name]; ok && nic.Neighbor == nil {
			nic.Neighbor = &nb
		}
		if nd, ok := pciDev[nic.PCIAddress]; ok && nic.Driver == "" {
			nic.Driver = bound(nd.Driver)
		}
	}
}

// maasNICFacts takes MAAS's details of the physical interfaces into the
// NICs (by MAC) and answers the MACs whose link state MAAS knows
// (link_connected, MAAS 2.7 and later).
func maasNICFacts(byMAC map[string]*drivers.NIC, ifaces []hwInterface) map[string]bool {
	linkKnown := map[string]bool{}
	for _, i := range ifaces {
		nic := byMAC[strings.ToLower(i.MAC)]
		if nic == nil || i.Type != "physical" {
			continue
		}
		nic.Vendor, nic.Product, nic.Firmware = bound(deref(i.Vendor)), bound(deref(i.Product)), bound(deref(i.Firmware))
		if i.LinkConnected != nil {
			nic.LinkUp, linkKnown[nic.MAC] = *i.LinkConnected, true
		}
		if (nic.LinkUp || i.LinkConnected == nil) && i.LinkSpeed > 0 {
			nic.SpeedMbps = i.LinkSpeed
		}
	}
	return linkKnown
}

// gpuFacts are lshw's display and processing accelerators, completed (IDs,
// NUMA node) and added to by MAAS's GPU node devices, by PCI address.
func gpuFacts(gpus []drivers.PCIDevice, ndevs []hwDevice, pciDev map[string]hwDevice) []drivers.PCIDevice {
	for i := range gpus {
		if nd, ok := pciDev[gpus[i].Address]; ok {
			gpus[i].VendorID, gpus[i].ProductID = bound(nd.VendorID), bound(nd.ProductID)
			if nd.NUMANode != nil && *nd.NUMANode >= 0 {
				gpus[i].NUMANode = *nd.NUMANode
			}
		}
	}
	for _, nd := range ndevs {
		if nd.HardwareType != hwTypeGPU && nd.HardwareTypeName != "GPU" || len(gpus) >= maxPCIDevices {
			continue
		}
		addr := strings.ToLower(bound(nd.PCIAddress))
		if addr == "" || slices.ContainsFunc(gpus, func(g drivers.PCIDevice) bool { return g.Address == addr }) {
			continue
		}
		g := drivers.PCIDevice{Vendor: bound(nd.VendorName), Model: bound(nd.ProductName), VendorID: bound(nd.VendorID), ProductID: bound(nd.ProductID), Address: addr}
		if nd.NUMANode != nil && *nd.NUMANode >= 0 {
			g.NUMANode = *nd.NUMANode
		}
		gpus = append(gpus, g)
	}
	slices.SortFunc(gpus, func(a, b drivers.PCIDevice) int { return strings.Compare(a.Address, b.Address) })
	return gpus
}

// diskAliases are the design's disk aliases by MAAS name, where they
// resolve (a disk the design names but the machine lacks is the as-built
// check's to report, not a reason to fail the inventory).
func (d *Driver) diskAliases(ctx context.Context, id string, s drivers.Storage, nds []nodeDevice) (map[string]string, error) {
	diskAlias := map[string]string{}
	var ddevs []drivers.Device
	for _, sd := range s.Devices {
		ddevs = append(ddevs, sd.Device)
	}
	if len(ddevs) == 0 {
		return diskAlias, nil
	}
	dn, err := d.resolveFrom(ctx, id, ddevs, true, nds)
	if err != nil && drivers.Classify(err) != drivers.Permanent {
		return nil, err
	}
	for a, r := range dn {
		diskAlias[r.Name] = a
	}
	return diskAlias, nil
}

// diskFacts are the machine's physical disks with their aliases and lshw
// bus addresses.
func diskFacts(disks []hwDisk, alias, bus map[string]string) []drivers.Disk {
	var out []drivers.Disk
	for _, b := range disks {
		if len(out) >= maxHWDisks {
			break
		}
		if b.Type != "" && b.Type != "physical" {
			continue
		}
		name := bound(b.Name)
		out = append(out, drivers.Disk{Alias: alias[name], Name: name, Model: bound(deref(b.Model)), Serial: bound(deref(b.Serial)),
			SizeBytes: max(b.Size, 0), BusAddress: bus[name], Rotational: slices.Contains(b.Tags, "rotary")})
	}
	return out
}

// details reads the commissioning details once and parses their lshw and
// lldp documents; MAAS answering 404 (no details yet) is no facts.
func (d *Driver) details(ctx context.Context, id string) (hwFacts, map[string]drivers.Neighbor, error) {
	body, err := d.c.getRawLimit(ctx, "machines/"+id+"/", "details", maxDetailsBytes)
	if isNotFound(err) {
		return hwFacts{}, nil, nil
	}
	if err != nil {
		return hwFacts{}, nil, err
	}
	var doc struct {
		LSHW []byte `bson:"lshw"`
		LLDP []byte `bson:"lldp"`
	}
	if len(body) > 0 {
		if err := bson.Unmarshal(body, &doc); err != nil {
			return hwFacts{}, nil, drivers.Errorf(drivers.Permanent, "maas: machine %s: decode the commissioning details: %v", id, err)
		}
	}
	facts, err := parseLSHW(doc.LSHW)
	if err != nil {
		return hwFacts{}, nil, drivers.Errorf(drivers.Permanent, "maas: machine %s: %v", id, err)
	}
	lldp, err := parseLLDP(doc.LLDP)
	if err != nil {
		return hwFacts{}, nil, drivers.Errorf(drivers.Permanent, "maas: machine %s: %v", id, err)
	}
	return facts, lldp, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// maxFactLen bounds one string fact read from MAAS.
const maxFactLen = 256

func bound(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxFactLen {
		return s[:maxFactLen]
	}
	return s
}
