package maas

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// The lshw XML of a machine's commissioning details (lshw -xml, as MAAS's
// commissioning stores it): the system's DMI identity, the BIOS, the
// processors, and per PCI device its class, vendor, product, bus address
// and the driver settings (driver, firmware) lshw read from the kernel.

// Bounds of what one lshw document may hold.
const (
	maxLSHWBytes  = 8 << 20 // the document
	maxLSHWNodes  = 20000   // nodes walked
	maxPCIDevices = 256     // GPUs and accelerators kept
	maxHWNICs     = 1024    // network nodes kept
	maxHWDisks    = 1024    // disk nodes kept
)

// lshwXNode is one <node> of lshw's XML.
type lshwXNode struct {
	ID           string       `xml:"id,attr"`
	Class        string       `xml:"class,attr"`
	Handle       string       `xml:"handle,attr"`
	Description  string       `xml:"description"`
	Product      string       `xml:"product"`
	Vendor       string       `xml:"vendor"`
	Version      string       `xml:"version"`
	Serial       string       `xml:"serial"`
	BusInfo      string       `xml:"businfo"`
	LogicalNames []string     `xml:"logicalname"`
	Date         string       `xml:"date"`
	Settings     []lshwSet    `xml:"configuration>setting"`
	Nodes        []*lshwXNode `xml:"node"`
}

type lshwSet struct {
	ID    string `xml:"id,attr"`
	Value string `xml:"value,attr"`
}

func (n *lshwXNode) setting(id string) string {
	for _, s := range n.Settings {
		if s.ID == id {
			return s.Value
		}
	}
	return ""
}

// hwFacts is what the lshw document says of a machine.
type hwFacts struct {
	System   drivers.System
	Firmware drivers.Firmware
	CPU      drivers.CPU
	GPUs     []drivers.PCIDevice // display and processing accelerators
	NICs     []hwNIC
	// DiskBus is each disk's bus address by kernel name (sda →
	// 2:0.0.0, nvme0n1 → 0000:5e:00.0, its controller's).
	DiskBus map[string]string
}

// hwNIC is a network node of lshw.
type hwNIC struct {
	Name, MAC, PCI, Driver, Firmware, Vendor, Product string
	Link                                              string // lshw's link setting: yes, no or ""
}

// parseLSHW reads an lshw XML document (a <list> of nodes, or lshw's older
// single root <node>). Missing parts are left zero; a document larger
// than maxLSHWBytes, or not XML, is an error.
func parseLSHW(doc []byte) (hwFacts, error) {
	var f hwFacts
	if len(doc) > maxLSHWBytes {
		return f, fmt.Errorf("lshw document of %d bytes is larger than %d", len(doc), maxLSHWBytes)
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		return f, nil
	}
	var root struct {
		XMLName xml.Name
		lshwXNode
	}
	if err := xml.Unmarshal(doc, &root); err != nil {
		return f, fmt.Errorf("parse lshw: %w", err)
	}
	var tops []*lshwXNode
	switch root.XMLName.Local {
	case "list":
		tops = root.Nodes
	case "node":
		tops = []*lshwXNode{&root.lshwXNode}
	default:
		return f, fmt.Errorf("parse lshw: root element <%s>, not <list> or <node>", root.XMLName.Local)
	}
	seen := 0
	var sockets, cores, threads int
	f.DiskBus = map[string]string{}
	var walk func(n *lshwXNode, depth int, parentBus string)
	walk = func(n *lshwXNode, depth int, parentBus string) {
		if seen++; seen > maxLSHWNodes || n == nil {
			return
		}
		switch {
		case n.Class == "system" && depth == 0:
			f.System = drivers.System{Vendor: clean(n.Vendor), Product: clean(n.Product), Serial: clean(n.Serial)}
		case n.Class == "memory" && (n.ID == "firmware" || strings.HasPrefix(n.ID, "firmware:")) && f.Firmware.BIOSVersion == "":
			f.Firmware.BIOSVendor, f.Firmware.BIOSVersion, f.Firmware.BIOSDate = clean(n.Vendor), clean(n.Version), clean(n.Date)
		case n.Class == "processor" && !disabledCPU(n):
			sockets++
			if f.CPU.Model == "" {
				f.CPU.Model = clean(n.Product)
			}
			c, _ := strconv.Atoi(n.setting("cores"))
			t, _ := strconv.Atoi(n.setting("threads"))
			cores, threads = cores+bounded(c), threads+bounded(t)
		case isAccelerator(n) && len(f.GPUs) < maxPCIDevices:
			if addr, ok := pciAddress(n.BusInfo); ok {
				numa, err := strconv.Atoi(n.setting("numa_node"))
				if err != nil || numa < 0 || numa > 1024 {
					numa = 0 // MAAS's index of the only node
				}
				f.GPUs = append(f.GPUs, drivers.PCIDevice{Vendor: clean(n.Vendor), Model: clean(n.Product), Address: addr, NUMANode: numa})
			}
		case n.Class == "network" && len(f.NICs) < maxHWNICs:
			nic := hwNIC{MAC: strings.ToLower(clean(n.Serial)), Driver: n.setting("driver"), Firmware: clean(n.setting("firmware")),
				Vendor: clean(n.Vendor), Product: clean(n.Product), Link: n.setting("link")}
			if len(n.LogicalNames) > 0 {
				nic.Name = n.LogicalNames[0]
			}
			nic.PCI, _ = pciAddress(n.BusInfo)
			f.NICs = append(f.NICs, nic)
		case n.Class == "disk" && len(n.LogicalNames) > 0 && len(f.DiskBus) < maxHWDisks:
			bus := n.BusInfo
			if !strings.HasPrefix(bus, "scsi@") && !strings.HasPrefix(bus, "pci@") {
				bus = parentBus // an NVMe namespace: its controller's
			}
			if _, a, ok := strings.Cut(bus, "@"); ok && a != "" && len(a) <= 32 {
				for _, ln := range n.LogicalNames {
					if name, ok := strings.CutPrefix(ln, "/dev/"); ok && !strings.Contains(name, "/") && len(f.DiskBus) < maxHWDisks {
						f.DiskBus[name] = strings.ToLower(a)
					}
				}
			}
		}
		pb := parentBus
		if strings.HasPrefix(n.BusInfo, "pci@") {
			pb = n.BusInfo
		}
		for _, c := range n.Nodes {
			walk(c, depth+1, pb)
		}
	}
	for _, t := range tops {
		walk(t, 0, "")
	}
	f.CPU.Sockets, f.CPU.Cores, f.CPU.Threads = sockets, cores, threads
	return f, nil
}

// bounded is a per-socket core or thread count, 0 when implausible.
func bounded(n int) int {
	if n < 0 || n > 4096 {
		return 0
	}
	return n
}

// isAccelerator: a display controller (VGA, 3D) that is not the BMC's
// video, or a processing accelerator (lshw class "processor" with a PCI
// bus address is a co-processor; class "generic" named accelerator).
func isAccelerator(n *lshwXNode) bool {
	if !strings.HasPrefix(n.BusInfo, "pci@") {
		return false
	}
	switch n.Class {
	case "display":
		// The BMC's on-board VGA (ASPEED, Matrox G200) is no GPU.
		v := strings.ToLower(n.Vendor + " " + n.Product)
		return !strings.Contains(v, "aspeed") && !strings.Contains(v, "matrox")
	case "processor":
		return true
	case "generic":
		d := strings.ToLower(n.Description)
		return strings.Contains(d, "accelerator") || strings.Contains(d, "processing")
	}
	return false
}

// disabledCPU: lshw lists empty sockets as disabled processors.
func disabledCPU(n *lshwXNode) bool {
	return strings.HasPrefix(n.BusInfo, "pci@") || strings.Contains(strings.ToLower(n.Description), "empty") || n.Product == ""
}

// pciAddress takes lshw's businfo pci@0000:ca:00.0 to 0000:ca:00.0.
func pciAddress(businfo string) (string, bool) {
	a, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(businfo)), "pci@")
	if !ok || a == "" || len(a) > 32 {
		return "", false
	}
	return a, true
}

// clean drops DMI's placeholders ("To Be Filled By O.E.M.", "Unknown")
// and the surrounding blanks.
func clean(s string) string {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "unknown", "to be filled by o.e.m.", "default string", "not specified", "none", "0123456789", "system serial number", "system product name", "system manufacturer":
		return ""
	}
	return s
}
