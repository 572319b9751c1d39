// The driver SDK's answers as the API shows them: a commissioned
// machine's inventory and a provisioner site's probe. The SDK's types are
// the plugin protocol; these are the HTTP contract, converted at the
// edge, so that a change to one is a decision about the other.

package apitypes

import (
	"maps"
	"slices"

	"github.com/slipway-dev/slipway/drivers"
)

// Inventory is the API's drivers.Inventory (conversions below).
type Inventory struct {
	MachineID string      `json:"machine_id"`
	NICs      []NIC       `json:"nics"`
	System    System      `json:"system,omitzero"`
	Firmware  Firmware    `json:"firmware,omitzero"`
	CPU       CPU         `json:"cpu,omitzero"`
	MemoryMiB int64       `json:"memory_mib,omitempty"`
	GPUs      []PCIDevice `json:"gpus,omitempty"`
	Disks     []Disk      `json:"disks,omitempty"`
}

// NIC is the API's drivers.NIC (conversions below).
type NIC struct {
	Alias      string    `json:"alias,omitempty"`
	Name       string    `json:"name"`
	MAC        string    `json:"mac"`
	PCIAddress string    `json:"pci_address,omitempty"`
	Driver     string    `json:"driver,omitempty"`
	Vendor     string    `json:"vendor,omitempty"`
	Product    string    `json:"product,omitempty"`
	Firmware   string    `json:"firmware,omitempty"`
	SpeedMbps  int       `json:"speed_mbps,omitempty"`
	LinkUp     bool      `json:"link_up,omitempty"`
	Neighbor   *Neighbor `json:"neighbor,omitempty"`
}

// Neighbor is the API's drivers.Neighbor (conversions below).
type Neighbor struct {
	Switch    string `json:"switch"`
	Port      string `json:"port"`
	ChassisID string `json:"chassis_id,omitempty"`
}

// System is the API's drivers.System (conversions below).
type System struct {
	Vendor  string `json:"vendor,omitempty"`
	Product string `json:"product,omitempty"`
	Serial  string `json:"serial,omitempty"`
}

// Firmware is the API's drivers.Firmware (conversions below).
type Firmware struct {
	BIOSVendor  string `json:"bios_vendor,omitempty"`
	BIOSVersion string `json:"bios_version,omitempty"`
	BIOSDate    string `json:"bios_date,omitempty"`
	BMCVersion  string `json:"bmc_version,omitempty"`
}

// CPU is the API's drivers.CPU (conversions below).
type CPU struct {
	Model   string `json:"model,omitempty"`
	Sockets int    `json:"sockets,omitempty"`
	Cores   int    `json:"cores,omitempty"`
	Threads int    `json:"threads,omitempty"`
}

// PCIDevice is the API's drivers.PCIDevice (conversions below).
type PCIDevice struct {
	Vendor    string `json:"vendor,omitempty"`
	Model     string `json:"model,omitempty"`
	VendorID  string `json:"vendor_id,omitempty"`
	ProductID string `json:"product_id,omitempty"`
	Address   string `json:"address"`
	NUMANode  int    `json:"numa_node"`
}

// Disk is the API's drivers.Disk (conversions below).
type Disk struct {
	Alias      string `json:"alias,omitempty"`
	Name       string `json:"name"`
	Model      string `json:"model,omitempty"`
	Serial     string `json:"serial,omitempty"`
	SizeBytes  int64  `json:"size_bytes"`
	BusAddress string `json:"bus_address,omitempty"`
	Rotational bool   `json:"rotational,omitempty"`
}

// SiteInfo is the API's drivers.SiteInfo (conversions below).
type SiteInfo struct {
	Reachable     bool                `json:"reachable"`
	Authenticated bool                `json:"authenticated"`
	Version       string              `json:"version,omitempty"`
	Capabilities  []string            `json:"capabilities,omitempty"`
	BootImages    []string            `json:"boot_images,omitempty"`
	Kernels       map[string][]string `json:"kernels,omitempty"`
	DefaultOS     string              `json:"default_os,omitempty"`
	DefaultImage  string              `json:"default_image,omitempty"`
	DHCPSubnets   []string            `json:"dhcp_subnets,omitempty"`
	Scripts       []Script            `json:"scripts,omitempty"`
}

// Script is the API's drivers.Script (conversions below).
type Script struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Version string   `json:"version,omitempty"`
	Updated string   `json:"updated,omitempty"`
	Tags    []string `json:"tags,omitempty"`
}

// FromInventory converts drivers.Inventory to the wire.
func FromInventory(v drivers.Inventory) Inventory {
	var w Inventory
	w.MachineID = v.MachineID
	if v.NICs != nil {
		w.NICs = make([]NIC, len(v.NICs))
		for i1 := range v.NICs {
			w.NICs[i1] = FromNIC(v.NICs[i1])
		}
	}
	w.System = FromSystem(v.System)
	w.Firmware = FromFirmware(v.Firmware)
	w.CPU = FromCPU(v.CPU)
	w.MemoryMiB = v.MemoryMiB
	if v.GPUs != nil {
		w.GPUs = make([]PCIDevice, len(v.GPUs))
		for i1 := range v.GPUs {
			w.GPUs[i1] = FromPCIDevice(v.GPUs[i1])
		}
	}
	if v.Disks != nil {
		w.Disks = make([]Disk, len(v.Disks))
		for i1 := range v.Disks {
			w.Disks[i1] = FromDisk(v.Disks[i1])
		}
	}
	return w
}

// ToDriver converts the wire's Inventory back to drivers.Inventory.
func (w Inventory) ToDriver() drivers.Inventory {
	var v drivers.Inventory
	v.MachineID = w.MachineID
	if w.NICs != nil {
		v.NICs = make([]drivers.NIC, len(w.NICs))
		for i1 := range w.NICs {
			v.NICs[i1] = w.NICs[i1].ToDriver()
		}
	}
	v.System = w.System.ToDriver()
	v.Firmware = w.Firmware.ToDriver()
	v.CPU = w.CPU.ToDriver()
	v.MemoryMiB = w.MemoryMiB
	if w.GPUs != nil {
		v.GPUs = make([]drivers.PCIDevice, len(w.GPUs))
		for i1 := range w.GPUs {
			v.GPUs[i1] = w.GPUs[i1].ToDriver()
		}
	}
	if w.Disks != nil {
		v.Disks = make([]drivers.Disk, len(w.Disks))
		for i1 := range w.Disks {
			v.Disks[i1] = w.Disks[i1].ToDriver()
		}
	}
	return v
}

// FromNIC converts drivers.NIC to the wire.
func FromNIC(v drivers.NIC) NIC {
	var w NIC
	w.Alias = v.Alias
	w.Name = v.Name
	w.MAC = v.MAC
	w.PCIAddress = v.PCIAddress
	w.Driver = v.Driver
	w.Vendor = v.Vendor
	w.Product = v.Product
	w.Firmware = v.Firmware
	w.SpeedMbps = v.SpeedMbps
	w.LinkUp = v.LinkUp
	if v.Neighbor != nil {
		p1 := FromNeighbor(*v.Neighbor)
		w.Neighbor = &p1
	}
	return w
}

// ToDriver converts the wire's NIC back to drivers.NIC.
func (w NIC) ToDriver() drivers.NIC {
	var v drivers.NIC
	v.Alias = w.Alias
	v.Name = w.Name
	v.MAC = w.MAC
	v.PCIAddress = w.PCIAddress
	v.Driver = w.Driver
	v.Vendor = w.Vendor
	v.Product = w.Product
	v.Firmware = w.Firmware
	v.SpeedMbps = w.SpeedMbps
	v.LinkUp = w.LinkUp
	if w.Neighbor != nil {
		p1 := w.Neighbor.ToDriver()
		v.Neighbor = &p1
	}
	return v
}

// FromNeighbor converts drivers.Neighbor to the wire.
func FromNeighbor(v drivers.Neighbor) Neighbor {
	var w Neighbor
	w.Switch = v.Switch
	w.Port = v.Port
	w.ChassisID = v.ChassisID
	return w
}

// ToDriver converts the wire's Neighbor back to drivers.Neighbor.
func (w Neighbor) ToDriver() drivers.Neighbor {
	var v drivers.Neighbor
	v.Switch = w.Switch
	v.Port = w.Port
	v.ChassisID = w.ChassisID
	return v
}

// FromSystem converts drivers.System to the wire.
func FromSystem(v drivers.System) System {
	var w System
	w.Vendor = v.Vendor
	w.Product = v.Product
	w.Serial = v.Serial
	return w
}

// ToDriver converts the wire's System back to drivers.System.
func (w System) ToDriver() drivers.System {
	var v drivers.System
	v.Vendor = w.Vendor
	v.Product = w.Product
	v.Serial = w.Serial
	return v
}

// FromFirmware converts drivers.Firmware to the wire.
func FromFirmware(v drivers.Firmware) Firmware {
	var w Firmware
	w.BIOSVendor = v.BIOSVendor
	w.BIOSVersion = v.BIOSVersion
	w.BIOSDate = v.BIOSDate
	w.BMCVersion = v.BMCVersion
	return w
}

// ToDriver converts the wire's Firmware back to drivers.Firmware.
func (w Firmware) ToDriver() drivers.Firmware {
	var v drivers.Firmware
	v.BIOSVendor = w.BIOSVendor
	v.BIOSVersion = w.BIOSVersion
	v.BIOSDate = w.BIOSDate
	v.BMCVersion = w.BMCVersion
	return v
}

// FromCPU converts drivers.CPU to the wire.
func FromCPU(v drivers.CPU) CPU {
	var w CPU
	w.Model = v.Model
	w.Sockets = v.Sockets
	w.Cores = v.Cores
	w.Threads = v.Threads
	return w
}

// ToDriver converts the wire's CPU back to drivers.CPU.
func (w CPU) ToDriver() drivers.CPU {
	var v drivers.CPU
	v.Model = w.Model
	v.Sockets = w.Sockets
	v.Cores = w.Cores
	v.Threads = w.Threads
	return v
}

// FromPCIDevice converts drivers.PCIDevice to the wire.
func FromPCIDevice(v drivers.PCIDevice) PCIDevice {
	var w PCIDevice
	w.Vendor = v.Vendor
	w.Model = v.Model
	w.VendorID = v.VendorID
	w.ProductID = v.ProductID
	w.Address = v.Address
	w.NUMANode = v.NUMANode
	return w
}

// ToDriver converts the wire's PCIDevice back to drivers.PCIDevice.
func (w PCIDevice) ToDriver() drivers.PCIDevice {
	var v drivers.PCIDevice
	v.Vendor = w.Vendor
	v.Model = w.Model
	v.VendorID = w.VendorID
	v.ProductID = w.ProductID
	v.Address = w.Address
	v.NUMANode = w.NUMANode
	return v
}

// FromDisk converts drivers.Disk to the wire.
func FromDisk(v drivers.Disk) Disk {
	var w Disk
	w.Alias = v.Alias
	w.Name = v.Name
	w.Model = v.Model
	w.Serial = v.Serial
	w.SizeBytes = v.SizeBytes
	w.BusAddress = v.BusAddress
	w.Rotational = v.Rotational
	return w
}

// ToDriver converts the wire's Disk back to drivers.Disk.
func (w Disk) ToDriver() drivers.Disk {
	var v drivers.Disk
	v.Alias = w.Alias
	v.Name = w.Name
	v.Model = w.Model
	v.Serial = w.Serial
	v.SizeBytes = w.SizeBytes
	v.BusAddress = w.BusAddress
	v.Rotational = w.Rotational
	return v
}

// FromSiteInfo converts drivers.SiteInfo to the wire.
func FromSiteInfo(v drivers.SiteInfo) SiteInfo {
	var w SiteInfo
	w.Reachable = v.Reachable
	w.Authenticated = v.Authenticated
	w.Version = v.Version
	w.Capabilities = slices.Clone(v.Capabilities)
	w.BootImages = slices.Clone(v.BootImages)
	w.Kernels = maps.Clone(v.Kernels)
	w.DefaultOS = v.DefaultOS
	w.DefaultImage = v.DefaultImage
	w.DHCPSubnets = slices.Clone(v.DHCPSubnets)
	if v.Scripts != nil {
		w.Scripts = make([]Script, len(v.Scripts))
		for i1 := range v.Scripts {
			w.Scripts[i1] = FromScript(v.Scripts[i1])
		}
	}
	return w
}

// FromScript converts drivers.Script to the wire.
func FromScript(v drivers.Script) Script {
	var w Script
	w.Name = v.Name
	w.Type = v.Type
	w.Version = v.Version
	w.Updated = v.Updated
	w.Tags = slices.Clone(v.Tags)
	return w
}
