package lab

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/secrets"
	"github.com/slipway-dev/slipway/sim/maas"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// DefaultBMCUser and DefaultBMCPassword are the credentials of generic
// lab machines and of design nodes whose password reference the lab can't
// resolve.
const (
	DefaultBMCUser     = "admin"
	DefaultBMCPassword = "lab-bmc-password"
)

type machineSpec struct {
	name      string
	hw        maas.Hardware
	user      string
	password  string
	designBMC string
	redfish   bool   // the BMC speaks Redfish too (redfish.go)
	site      string // the node's Site (its MAAS region)
	// The firmware inventory and bay drives its Redfish BMC reports (nil:
	// the service's defaults; baseline.go).
	firmware []simrf.FirmwareItem
	drives   []simrf.Drive
}

// machineSpecs lists the machines to build: one per design node, then the
// generic ones.
func machineSpecs(cfg Config) ([]machineSpec, error) {
	var out []machineSpec
	if d := cfg.Design; d != nil {
		for _, name := range d.NodeNames() {
			sp, err := nodeSpec(d, d.Nodes[name], cfg.Secrets)
			if err != nil {
				return nil, err
			}
			out = append(out, sp)
		}
	}
	for i := 0; i < cfg.Machines; i++ {
		out = append(out, genericSpec(i))
	}
	return out, nil
}

// nodeSpec builds the hardware a design node describes: its interfaces'
// devices become NICs at their PCI addresses, its storage devices disks.
func nodeSpec(d *design.Design, n *design.Node, secrets func(string) (string, error)) (machineSpec, error) {
	name := n.Metadata.Name
	sp := machineSpec{name: name, designBMC: n.Spec.OOB.Address, user: DefaultBMCUser, password: DefaultBMCPassword, site: d.SiteNameOf(n),
		redfish: redfishOf(d, n)}
	if c := n.Spec.OOB.Credentials; c != nil {
		sp.user = c.Username
		if pw, err := secrets(c.Password); err == nil {
			sp.password = pw
		}
	}
	hw := maas.Hardware{Arch: "amd64/generic", CPUs: 32, MemoryMiB: 262144, Vendor: "Lab", Product: "Simulated"}
	if h := n.Spec.Hardware; h != nil {
		hw.Vendor, hw.Product = orDefault(h.Vendor, hw.Vendor), orDefault(h.Model, hw.Product)
	}
	hw.NICs = nodeNICs(n)
	hw.Disks = nodeDisks(n)
	applyProfile(&hw, n) // hardware.go
	sp.hw = hw
	sp.firmware, sp.drives = redfishInventory(&hw, n) // baseline.go
	return sp, nil
}

// nodeNICs are a node's NICs: those of its interfaces (on the interface's
// link), then those the design cables or expects without an interface on
// them; one on the lab network when there are none.
func nodeNICs(n *design.Node) []maas.NIC {
	name := n.Metadata.Name
	var nics []maas.NIC
	seen := map[string]bool{}
	add := func(dev, network string, onInterface bool) {
		seen[dev] = true
		pci := aliasAddr(n, dev, "pci")
		if pci == "" {
			pci = fakePCI(name, dev)
		}
		m := mac(name, dev)
		if bm := n.Spec.BootMAC; bm != "" && onInterface && dev == pxeDevice(n) {
			m = strings.ToLower(bm) // the design identifies the machine by this NIC
		}
		nics = append(nics, maas.NIC{MAC: m, PCI: pci, Name: pciName(pci), Network: network,
			Vendor: "Intel Corporation", Product: "Ethernet Controller E810-XXV", Alias: dev})
	}
	for _, in := range sortedKeys(n.Spec.Interfaces) {
		i := n.Spec.Interfaces[in]
		for _, dev := range i.Devices {
			if !seen[dev] {
				add(dev, i.Link, true)
			}
		}
	}
	var extra []string
	if h := n.Spec.Hardware; h != nil && h.Expect != nil {
		extra = append(extra, sortedKeys(h.Expect.NICs)...)
	}
	extra = append(extra, sortedKeys(n.Spec.Cabling)...)
	for _, dev := range extra {
		if _, disk := n.Spec.Storage.Devices[dev]; !seen[dev] && !disk {
			add(dev, "", false)
		}
	}
	if len(nics) == 0 {
		nics = []maas.NIC{{MAC: mac(name, "eth0"), PCI: fakePCI(name, "eth0"), Name: "eno1", Network: "lab"}}
	}
	return nics
}

// nodeDisks are a node's disks, one per storage device: NVMe ones by their
// alias's bus, SCSI ones otherwise; one SCSI disk when there are none.
func nodeDisks(n *design.Node) []maas.Disk {
	name := n.Metadata.Name
	var disks []maas.Disk
	nvme, scsi := 0, 0
	for _, dn := range sortedKeys(n.Spec.Storage.Devices) {
		disk := maas.Disk{Size: defaultDiskBytes, Model: "Lab SSD", Serial: serialNumber(name, dn), Alias: dn}
		if a, ok := alias(n, dn); ok {
			disk.Bus, disk.Addr = a.Bus, a.Address
		}
		switch disk.Bus {
		case "nvme", "pci":
			disk.Name = fmt.Sprintf("nvme%dn1", nvme)
			nvme++
		default:
			disk.Name = "sd" + string(rune('a'+scsi))
			if disk.Addr == "" {
				disk.Bus, disk.Addr = "scsi", fmt.Sprintf("%d:0:0:0", scsi)
			}
			scsi++
		}
		disks = append(disks, disk)
	}
	if len(disks) == 0 {
		disks = []maas.Disk{{Name: "sda", Bus: "scsi", Addr: "0:0:0:0", Size: 960e9, Model: "Lab SSD", Serial: serialNumber(name, "sda")}}
	}
	return disks
}

func genericSpec(i int) machineSpec {
	name := fmt.Sprintf("lab-%04d", i+1)
	return machineSpec{name: name, user: DefaultBMCUser, password: DefaultBMCPassword, hw: maas.Hardware{
		Arch: "amd64/generic", CPUs: 16, MemoryMiB: 65536, Vendor: "Lab", Product: "Generic", Serial: serialNumber(name, "system"),
		NICs: []maas.NIC{
			{MAC: mac(name, "nic0"), PCI: fmt.Sprintf("0000:%02x:00.0", 0x18+i%200), Name: "eno1", Network: "lab"},
			{MAC: mac(name, "nic1"), PCI: fmt.Sprintf("0000:%02x:00.1", 0x18+i%200), Name: "eno2", Network: "lab"},
		},
		Disks: []maas.Disk{{Name: "sda", Bus: "scsi", Addr: "0:0:0:0", Size: 480e9, Model: "Lab SSD", Serial: serialNumber(name, "sda")}},
	}}
}

// pxeDevice is the device the node PXE-boots from: the hardware
// profile's, else the first device of its first interface.
func pxeDevice(n *design.Node) string {
	if hw := n.Spec.Hardware; hw != nil && hw.PXE.Interface != "" {
		return hw.PXE.Interface
	}
	for _, in := range sortedKeys(n.Spec.Interfaces) {
		if devs := n.Spec.Interfaces[in].Devices; len(devs) > 0 {
			return devs[0]
		}
	}
	return ""
}

func alias(n *design.Node, dev string) (design.DeviceAlias, bool) {
	if n.Spec.Hardware == nil {
		return design.DeviceAlias{}, false
	}
	a, ok := n.Spec.Hardware.DeviceAliases[dev]
	return a, ok
}

func aliasAddr(n *design.Node, dev, bus string) string {
	if a, ok := alias(n, dev); ok && a.Bus == bus {
		return a.Address
	}
	return ""
}

// mac is a stable, locally administered MAC for a node's device.
func mac(node, dev string) string {
	h := sha256.Sum256([]byte(node + "/" + dev))
	return fmt.Sprintf("52:54:%02x:%02x:%02x:%02x", h[0], h[1], h[2], h[3])
}

func serialNumber(node, dev string) string {
	h := sha256.Sum256([]byte("serial/" + node + "/" + dev))
	return fmt.Sprintf("LAB%X", h[:6])
}

func fakePCI(node, dev string) string {
	h := sha256.Sum256([]byte("pci/" + node + "/" + dev))
	return fmt.Sprintf("0000:%02x:%02x.%d", h[0], h[1]&0x1f, h[2]&0x7)
}

// pciName is the predictable interface name udev gives a PCI NIC:
// 0000:3b:00.1 -> enp59s0f1.
func pciName(pci string) string {
	parts := strings.FieldsFunc(pci, func(r rune) bool { return r == ':' || r == '.' })
	if len(parts) != 4 {
		return "eth0"
	}
	bus, _ := strconv.ParseInt(parts[1], 16, 32)
	dev, _ := strconv.ParseInt(parts[2], 16, 32)
	fn, _ := strconv.ParseInt(parts[3], 16, 32)
	return fmt.Sprintf("enp%ds%df%d", bus, dev, fn)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func sortedKeys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ResolveSecret resolves a secret reference with secrets.Resolve: env:VAR,
// file:/path, and secret:NAME from the environment variable
// SLIPWAY_SECRET_<NAME> (upper case, '-' and '.' as '_').
func ResolveSecret(ref string) (string, error) {
	v, err := secrets.Resolve(ref)
	if err != nil {
		return "", err
	}
	return v.Reveal(), nil
}
