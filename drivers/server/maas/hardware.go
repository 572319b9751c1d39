package maas

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/juju/mgo/v2/bson"
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
	m, err := d.machine(ctx, n.MachineID, partInterfaces)
	if err != nil {
		return drivers.Inventory{}, err
	}
	var devs []drivers.Device
	for _, in := range n.Interfaces {
		devs = append(devs, in.Devices...)
	}
	names, err := d.resolveDevices(ctx, m.SystemID, devs, false)
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
	if err := d.hardwareFacts(ctx, n, &inv); err != nil {
		return drivers.Inventory{}, err
	}
	return inv, nil
}

// mHardware is the part of a machine read that inventory takes.
type mHardware struct {
	CPUCount     int               `json:"cpu_count"`
	Memory       int64             `json:"memory"` // MiB
	HardwareInfo map[string]string `json:"hardware_info"`
	Interfaces   []struct {
		Name     string  `json:"name"`
		Type     string  `json:"type"`
		MAC      string  `json:"mac_address"`
		Vendor   *string `json:"vendor"`
		Product  *string `json:"product"`
		Firmware *string `json:"firmware_version"`
		// link_connected is absent before MAAS 2.7: nil, unknown.
		LinkConnected *bool `json:"link_connected"`
		LinkSpeed     int   `json:"link_speed"` // Mbit/s
	} `json:"interface_set"`
	Disks []struct {
		Name   string   `json:"name"`
		Type   string   `json:"type"`
		Model  *string  `json:"model"`
		Serial *string  `json:"serial"`
		Size   int64    `json:"size"`
		IDPath *string  `json:"id_path"`
		Tags   []string `json:"tags"` // rotary, ssd, removable
	} `json:"physicalblockdevice_set"`
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

// hardwareFacts fills the inventory's hardware facts beside its NICs.
func (d *Driver) hardwareFacts(ctx context.Context, n drivers.Node, inv *drivers.Inventory) error {
	id := inv.MachineID
	var hw mHardware
	if err := d.c.callLimit(ctx, http.MethodGet, "machines/"+id+"/", "", nil, &hw, maxMachineReadBytes); err != nil {
		return err
	}
	var ndevs []hwDevice
	if err := d.c.callLimit(ctx, http.MethodGet, "nodes/"+id+"/devices/", "", nil, &ndevs, maxMachineReadBytes); err != nil && !isNotFound(err) {
		return err // MAAS 2.x has none: 404
	}
	if len(ndevs) > maxNodeDevices {
		ndevs = ndevs[:maxNodeDevices]
	}
	facts, lldp, err := d.details(ctx, id)
	if err != nil {
		return err
	}

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

	// NICs: MAAS's interface details, then lshw's driver and firmware,
	// and the LLDP neighbour by kernel name.
	byMAC := map[string]*drivers.NIC{}
	linkKnown := map[string]bool{} // MAAS said (link_connected, MAAS 2.7 and later)
	for i := range inv.NICs {
		byMAC[inv.NICs[i].MAC] = &inv.NICs[i]
	}
	for _, i := range hw.Interfaces {
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
	for _, h := range facts.NICs {
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
			nb := nb
			nic.Neighbor = &nb
		}
	}
	for i := range inv.NICs {
		nic := &inv.NICs[i]
		if nb, ok := lldp[nic.Name]; ok && nic.Neighbor == nil {
			nb := nb
			nic.Neighbor = &nb
		}
	}
	pciDev := map[string]hwDevice{}
	for _, nd := range ndevs {
		pciDev[strings.ToLower(nd.PCIAddress)] = nd
	}
	for i := range inv.NICs {
		if nd, ok := pciDev[inv.NICs[i].PCIAddress]; ok && inv.NICs[i].Driver == "" {
			inv.NICs[i].Driver = bound(nd.Driver)
		}
	}

	// GPUs: lshw's display and processing accelerators, completed (IDs,
	// NUMA node) and added to by MAAS's GPU node devices.
	gpus := facts.GPUs
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
	inv.GPUs = gpus

	// Disks, with the design's aliases where they resolve (a disk the
	// design names but the machine lacks is the as-built check's to
	// report, not a reason to fail the inventory).
	diskAlias := map[string]string{}
	var ddevs []drivers.Device
	for _, sd := range n.Storage.Devices {
		ddevs = append(ddevs, sd.Device)
	}
	if len(ddevs) > 0 {
		dn, err := d.resolveDevices(ctx, id, ddevs, true)
		if err != nil && drivers.Classify(err) != drivers.Permanent {
			return err
		}
		for a, r := range dn {
			diskAlias[r.Name] = a
		}
	}
	for _, b := range hw.Disks {
		if len(inv.Disks) >= maxHWDisks {
			break
		}
		if b.Type != "" && b.Type != "physical" {
			continue
		}
		name := bound(b.Name)
		inv.Disks = append(inv.Disks, drivers.Disk{Alias: diskAlias[name], Name: name, Model: bound(deref(b.Model)), Serial: bound(deref(b.Serial)),
			SizeBytes: max(b.Size, 0), BusAddress: facts.DiskBus[name], Rotational: slices.Contains(b.Tags, "rotary")})
	}
	return nil
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
