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
	if len(doc) > maxLSHWBytes {
		return hwFacts{}, fmt.Errorf("lshw document of %d bytes is larger than %d", len(doc), maxLSHWBytes)
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		return hwFacts{}, nil
	}
	tops, err := lshwTops(doc)
	if err != nil {
		return hwFacts{}, err
	}
	w := lshwWalk{f: hwFacts{DiskBus: map[string]string{}}}
	for _, t := range tops {
		w.walk(t, 0, "")
	}
	w.f.CPU.Sockets, w.f.CPU.Cores, w.f.CPU.Threads = w.sockets, w.cores, w.threads
	return w.f, nil
}

// lshwTops decodes the document's top nodes: lshwScan's when it reads
// the document, else encoding/xml's.
func lshwTops(doc []byte) ([]*lshwXNode, error) {
	if tops, ok := lshwScan(doc); ok {
		return tops, nil
	}
	return lshwTopsXML(doc)
}

// lshwTopsXML decodes the document's top nodes with encoding/xml.
func lshwTopsXML(doc []byte) ([]*lshwXNode, error) {
	var root struct {
		XMLName xml.Name
		lshwXNode
	}
	if err := xml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("parse lshw: %w", err)
	}
	switch root.XMLName.Local {
	case "list":
		return root.Nodes, nil
	case "node":
		return []*lshwXNode{&root.lshwXNode}, nil
	}
	return nil, fmt.Errorf("parse lshw: root element <%s>, not <list> or <node>", root.XMLName.Local)
}

// lshwWalk gathers the facts of an lshw tree, at most maxLSHWNodes nodes.
type lshwWalk struct {
	f                       hwFacts
	seen                    int
	sockets, cores, threads int
}

// walk visits n and its children; parentBus is the PCI bus address of
// the nearest PCI ancestor (an NVMe namespace takes its controller's).
func (w *lshwWalk) walk(n *lshwXNode, depth int, parentBus string) {
	if w.seen++; w.seen > maxLSHWNodes || n == nil {
		return
	}
	w.visit(n, depth, parentBus)
	pb := parentBus
	if strings.HasPrefix(n.BusInfo, "pci@") {
		pb = n.BusInfo
	}
	for _, c := range n.Nodes {
		w.walk(c, depth+1, pb)
	}
}

// visit takes the facts of one node by its class.
func (w *lshwWalk) visit(n *lshwXNode, depth int, parentBus string) {
	f := &w.f
	switch {
	case n.Class == "system" && depth == 0:
		f.System = drivers.System{Vendor: clean(n.Vendor), Product: clean(n.Product), Serial: clean(n.Serial)}
	case isFirmware(n) && f.Firmware.BIOSVersion == "":
		f.Firmware.BIOSVendor, f.Firmware.BIOSVersion, f.Firmware.BIOSDate = clean(n.Vendor), clean(n.Version), clean(n.Date)
	case n.Class == "processor" && !disabledCPU(n):
		w.processor(n)
	case isAccelerator(n):
		if addr, ok := pciAddress(n.BusInfo); ok && len(f.GPUs) < maxPCIDevices {
			f.GPUs = append(f.GPUs, drivers.PCIDevice{Vendor: clean(n.Vendor), Model: clean(n.Product), Address: addr, NUMANode: numaNode(n)})
		}
	case n.Class == "network" && len(f.NICs) < maxHWNICs:
		f.NICs = append(f.NICs, lshwNIC(n))
	case n.Class == "disk" && len(n.LogicalNames) > 0 && len(f.DiskBus) < maxHWDisks:
		w.disk(n, parentBus)
	}
}

// isFirmware: the node is the BIOS (lshw's memory node "firmware").
func isFirmware(n *lshwXNode) bool {
	return n.Class == "memory" && (n.ID == "firmware" || strings.HasPrefix(n.ID, "firmware:"))
}

// processor counts a populated socket with its cores and threads; the
// first one's product is the CPU model.
func (w *lshwWalk) processor(n *lshwXNode) {
	w.sockets++
	if w.f.CPU.Model == "" {
		w.f.CPU.Model = clean(n.Product)
	}
	c, _ := strconv.Atoi(n.setting("cores"))
	t, _ := strconv.Atoi(n.setting("threads"))
	w.cores, w.threads = w.cores+bounded(c), w.threads+bounded(t)
}

// numaNode is an accelerator's NUMA node, 0 (MAAS's index of the only
// node) when lshw gives none or an implausible one.
func numaNode(n *lshwXNode) int {
	numa, err := strconv.Atoi(n.setting("numa_node"))
	if err != nil || numa < 0 || numa > 1024 {
		return 0
	}
	return numa
}

// lshwNIC is a network node as a NIC: MAC, kernel name, PCI address,
// driver, firmware and link.
func lshwNIC(n *lshwXNode) hwNIC {
	nic := hwNIC{MAC: strings.ToLower(clean(n.Serial)), Driver: n.setting("driver"), Firmware: clean(n.setting("firmware")),
		Vendor: clean(n.Vendor), Product: clean(n.Product), Link: n.setting("link")}
	if len(n.LogicalNames) > 0 {
		nic.Name = n.LogicalNames[0]
	}
	nic.PCI, _ = pciAddress(n.BusInfo)
	return nic
}

// disk notes the bus address of a disk node under each of its /dev names.
func (w *lshwWalk) disk(n *lshwXNode, parentBus string) {
	bus := n.BusInfo
	if !strings.HasPrefix(bus, "scsi@") && !strings.HasPrefix(bus, "pci@") {
		bus = parentBus // an NVMe namespace: its controller's
	}
	_, a, ok := strings.Cut(bus, "@")
	if !ok || a == "" || len(a) > 32 {
		return
	}
	for _, ln := range n.LogicalNames {
		if name, ok := strings.CutPrefix(ln, "/dev/"); ok && !strings.Contains(name, "/") && len(w.f.DiskBus) < maxHWDisks {
			w.f.DiskBus[name] = strings.ToLower(a)
		}
	}
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
