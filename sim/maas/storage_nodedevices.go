package maas

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
)

// Node devices (MAAS 3.x): GET /nodes/{system_id}/devices/ and
// /nodes/{system_id}/devices/{id}/, the PCI inventory commissioning finds.
// The simulator builds it from the machine's hardware: a network device per
// NIC with a PCI address and a storage device per NVMe (PCI) disk, each tied
// to its interface or block device, as MAAS ties them.

type nodeDevice struct {
	ID           int
	Bus          int // 1 PCIE, 2 USB
	HardwareType int // 0 Node, 1 CPU, 2 Memory, 3 Storage, 4 Network, 5 GPU
	VendorID     string
	ProductID    string
	VendorName   string
	ProductName  string
	Driver       string
	BusNumber    int
	DeviceNumber int
	PCIAddress   string
	MAC          string // a NIC: its interface
	Disk         string // an NVMe disk: its block device's name
	NUMANode     int
}

const (
	busPCIE = 1
	busUSB  = 2

	hwNode    = 0
	hwCPU     = 1
	hwMemory  = 2
	hwStorage = 3
	hwNetwork = 4
	hwGPU     = 5
)

var busNames = map[int]string{busPCIE: "PCIE", busUSB: "USB"}

var hardwareTypeNames = map[int]string{hwNode: "Node", hwCPU: "CPU", hwMemory: "Memory", hwStorage: "Storage",
	hwNetwork: "Network", hwGPU: "GPU"}

// pciIDs are the PCI vendor and device IDs (and kernel drivers) of the
// devices the lab describes by name; others get stable made-up IDs.
var pciVendors = map[string]string{
	"Intel Corporation": "8086", "Mellanox Technologies": "15b3", "Broadcom Inc. and subsidiaries": "14e4",
	"Red Hat, Inc.": "1af4", "NVIDIA Corporation": "10de", "Samsung Electronics Co Ltd": "144d", "Micron Technology Inc": "1344",
}

var pciProducts = map[string][2]string{ // product name -> device id, driver
	"Ethernet Controller E810-XXV":                                  {"159b", "ice"},
	"Ethernet Controller E810-C for QSFP":                           {"1592", "ice"},
	"Ethernet Controller X710 for 10GbE SFP+":                       {"1572", "i40e"},
	"Ethernet Controller XL710 for 40GbE QSFP+":                     {"1583", "i40e"},
	"I350 Gigabit Network Connection":                               {"1521", "igb"},
	"MT27800 Family [ConnectX-5]":                                   {"1017", "mlx5_core"},
	"MT2892 Family [ConnectX-6 Dx]":                                 {"101d", "mlx5_core"},
	"MT2910 Family [ConnectX-7]":                                    {"1021", "mlx5_core"},
	"BCM57508 NetXtreme-E 10Gb/25Gb/40Gb/50Gb/100Gb/200Gb Ethernet": {"1750", "bnxt_en"},
	"Virtio network device":                                         {"1000", "virtio-pci"},
}

func madeUpID(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("%04x", h.Sum32()&0xffff)
}

// parseBDF reads the bus and device numbers of a PCI address
// (domain:bus:device.function, hexadecimal).
func parseBDF(addr string) (bus, dev int, ok bool) {
	parts := strings.Split(addr, ":")
	if len(parts) == 2 {
		parts = append([]string{"0000"}, parts...)
	}
	if len(parts) != 3 {
		return 0, 0, false
	}
	d, _, _ := strings.Cut(parts[2], ".")
	b, err1 := strconv.ParseUint(parts[1], 16, 16)
	n, err2 := strconv.ParseUint(d, 16, 16)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return int(b), int(n), true
}

// syncNodeDevices (re)builds the inventory from the hardware, keeping the
// ids of devices already known by PCI address. Nothing before commissioning.
func (s *Server) syncNodeDevices(m *machine) []*nodeDevice {
	if !m.commissioned || m.hw == nil {
		return nil
	}
	old := map[string]*nodeDevice{}
	for _, d := range m.nodeDevices {
		old[d.PCIAddress] = d
	}
	var out []*nodeDevice
	add := func(d *nodeDevice) {
		bus, dev, ok := parseBDF(d.PCIAddress)
		if !ok {
			return
		}
		d.Bus, d.BusNumber, d.DeviceNumber = busPCIE, bus, dev
		if o := old[d.PCIAddress]; o != nil {
			d.ID = o.ID
		} else {
			d.ID = s.nextID()
		}
		out = append(out, d)
	}
	for _, nic := range m.hw.NICs {
		if nic.PCI == "" {
			continue
		}
		d := &nodeDevice{HardwareType: hwNetwork, PCIAddress: nic.PCI, MAC: strings.ToLower(nic.MAC),
			VendorName: nic.Vendor, ProductName: nic.Product}
		d.VendorID = pciVendors[nic.Vendor]
		if d.VendorID == "" {
			d.VendorID = madeUpID("vendor:" + nic.Vendor)
		}
		if p, ok := pciProducts[nic.Product]; ok {
			d.ProductID, d.Driver = p[0], p[1]
		} else {
			d.ProductID = madeUpID("product:" + nic.Product)
		}
		if nic.Driver != "" {
			d.Driver = nic.Driver
		}
		d.NUMANode = nic.NUMANode
		add(d)
	}
	for _, g := range m.hw.GPUs {
		if g.PCI == "" {
			continue
		}
		d := &nodeDevice{HardwareType: hwGPU, PCIAddress: g.PCI, VendorName: g.Vendor, ProductName: g.Product,
			VendorID: g.VendorID, ProductID: g.ProductID, Driver: orDefault(g.Driver, "nvidia"), NUMANode: g.NUMANode}
		if d.VendorID == "" {
			d.VendorID = madeUpID("vendor:" + g.Vendor)
		}
		if d.ProductID == "" {
			d.ProductID = madeUpID("product:" + g.Product)
		}
		add(d)
	}
	for _, disk := range m.hw.Disks {
		if (disk.Bus != "pci" && disk.Bus != "nvme") || disk.Addr == "" {
			continue
		}
		add(&nodeDevice{HardwareType: hwStorage, PCIAddress: disk.Addr, Disk: disk.Name,
			VendorID: madeUpID("vendor:" + disk.Model), ProductID: madeUpID("product:" + disk.Model),
			ProductName: disk.Model, Driver: "nvme"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	m.nodeDevices = out
	return out
}

func (s *Server) renderNodeDevice(m *machine, d *nodeDevice) map[string]any {
	// physical_interface and physical_blockdevice are foreign keys, which
	// MAAS's API serialises as the whole related object.
	var iface, disk any
	if d.MAC != "" {
		for _, i := range m.Interfaces {
			if i.Type == "physical" && strings.EqualFold(i.MAC, d.MAC) {
				iface = s.renderInterface(m, i)
			}
		}
	}
	if d.Disk != "" {
		for _, b := range m.BlockDevices {
			if b.Type == "physical" && b.Name == d.Disk {
				disk = s.renderBlockDevice(m, b)
			}
		}
	}
	return map[string]any{"id": d.ID, "bus": d.Bus, "bus_name": busNames[d.Bus],
		"hardware_type": d.HardwareType, "hardware_type_name": hardwareTypeNames[d.HardwareType],
		"system_id": m.SystemID, "numa_node": d.NUMANode, "physical_blockdevice": disk, "physical_interface": iface,
		"vendor_id": d.VendorID, "product_id": d.ProductID, "vendor_name": d.VendorName, "product_name": d.ProductName,
		"commissioning_driver": d.Driver, "bus_number": d.BusNumber, "device_number": d.DeviceNumber,
		"pci_address": d.PCIAddress, "resource_uri": uri("/nodes/%s/devices/%d/", m.SystemID, d.ID)}
}

// nodeDevicesRead lists the devices, filtered by bus, hardware_type,
// vendor_id, product_id, vendor_name, product_name, commissioning_driver.
func (s *Server) nodeDevicesRead(m *machine, req *request) (any, *apiError) {
	f := req.form
	bus, hwType := -1, -1
	if v := f.get("bus"); f.has("bus") {
		switch strings.ToLower(v) {
		case "pcie", "1":
			bus = busPCIE
		case "usb", "2":
			bus = busUSB
		default:
			if _, err := strconv.Atoi(v); err == nil {
				return nil, plainBadRequest("Invalid bus numeric value!")
			}
			return nil, plainBadRequest("Bus must be PCIE or USB!")
		}
	}
	if v := f.get("hardware_type"); f.has("hardware_type") {
		t, err := hardwareType(v)
		if err != nil {
			return nil, err
		}
		hwType = t
	}
	match := func(key, have string) bool {
		return !f.has(key) || strings.EqualFold(f.get(key), have)
	}
	out := []any{}
	for _, d := range s.syncNodeDevices(m) {
		if (bus >= 0 && d.Bus != bus) || (hwType >= 0 && d.HardwareType != hwType) ||
			!match("vendor_id", d.VendorID) || !match("product_id", d.ProductID) ||
			!match("vendor_name", d.VendorName) || !match("product_name", d.ProductName) ||
			!match("commissioning_driver", d.Driver) {
			continue
		}
		out = append(out, s.renderNodeDevice(m, d))
	}
	return out, nil
}

// hardwareType is translate_hardware_type.
func hardwareType(v string) (int, *apiError) {
	if n, err := strconv.Atoi(v); err == nil {
		if _, ok := hardwareTypeNames[n]; ok {
			return n, nil
		}
		return 0, plainBadRequest("Invalid hardware type numeric value.")
	}
	switch strings.ToLower(v) {
	case "node", "machine", "controller", "other", "generic":
		return hwNode, nil
	case "cpu", "processor":
		return hwCPU, nil
	case "memory", "ram":
		return hwMemory, nil
	case "storage", "disk", "ssd":
		return hwStorage, nil
	case "network", "net", "interface":
		return hwNetwork, nil
	case "gpu", "graphics":
		return hwGPU, nil
	}
	return 0, plainBadRequest("Hardware type must be node, cpu, memory, storage, or gpu")
}

// nodeDeviceRead finds a device by id, PCI address, or bus:device.
func (s *Server) nodeDeviceRead(m *machine, req *request) (any, *apiError) {
	id := req.params["id"]
	for _, d := range s.syncNodeDevices(m) {
		if strconv.Itoa(d.ID) == id || d.PCIAddress == id || fmt.Sprintf("%d:%d", d.BusNumber, d.DeviceNumber) == id {
			return s.renderNodeDevice(m, d), nil
		}
	}
	if _, err := strconv.Atoi(id); err != nil {
		// MAAS's lookup by address turns its own 404 into this.
		return nil, plainBadRequest("Invalid id format!")
	}
	return nil, notFound("NodeDevice")
}
