package maas

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/juju/mgo/v2/bson"
)

// A machine's hardware as MAAS reports it after commissioning: the
// machine read's hardware_info, cpu_speed and NUMA nodes, the interfaces'
// speeds and firmware, the block devices' tags, and op=details (a BSON
// document of the lshw and lldpd XML commissioning captured). Nothing is
// rendered ahead: the XML is written on request from the Hardware, so a
// lab of 10,000 machines keeps no strings for it.

// Lab defaults for what a Hardware leaves zero.
const (
	defaultCPUSpeedMHz = 2400
	defaultNICMbps     = 25000
	defaultBIOSVendor  = "Lab"
	defaultBIOSVersion = "2.1.0"
	defaultBIOSDate    = "01/15/2026"
	defaultBMCVersion  = "5.10"
	defaultDiskRPM     = 7200
	defaultNICDriver   = "ice"
)

func (h *Hardware) sockets() int { return max(h.CPUSockets, 1) }

func (h *Hardware) cores() int {
	if h.CPUCores > 0 {
		return h.CPUCores
	}
	return max(h.CPUs/2, 1)
}

func (h *Hardware) cpuSpeed() int {
	if h.CPUSpeedMHz > 0 {
		return h.CPUSpeedMHz
	}
	return defaultCPUSpeedMHz
}

func (h *Hardware) cpuModel() string { return orDefault(h.CPUModel, "Lab Virtual CPU") }

// BIOS returns the BIOS vendor, version and date (the lab's defaults for
// what is unset).
func (h *Hardware) BIOS() (vendor, version, date string) {
	return orDefault(h.BIOSVendor, defaultBIOSVendor), orDefault(h.BIOSVersion, defaultBIOSVersion), orDefault(h.BIOSDate, defaultBIOSDate)
}

// BMC returns the BMC firmware version.
func (h *Hardware) BMC() string { return orDefault(h.BMCVersion, defaultBMCVersion) }

func (n *NIC) speed() int {
	if n.LinkDown {
		return 0
	}
	if n.SpeedMbps > 0 {
		return n.SpeedMbps
	}
	return n.maxSpeed()
}

func (n *NIC) maxSpeed() int {
	if n.MaxMbps > 0 {
		return n.MaxMbps
	}
	return max(n.SpeedMbps, defaultNICMbps)
}

func (n *NIC) driver() string { return orDefault(n.Driver, defaultNICDriver) }

// nicOf is the hardware's NIC with that MAC, or nil.
func (h *Hardware) nicOf(mac string) *NIC {
	for i := range h.NICs {
		if strings.EqualFold(h.NICs[i].MAC, mac) {
			return &h.NICs[i]
		}
	}
	return nil
}

// commissionedHW is the hardware MAAS knows of m: nil before commissioning.
func commissionedHW(m *machine) *Hardware {
	if m.hw == nil || !m.commissioned {
		return nil
	}
	return m.hw
}

// hardwareInfo is the machine read's hardware_info: "Unknown" until
// commissioning reports the DMI data (MAAS's NodeMetadata keys).
func hardwareInfo(m *machine) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"system_vendor", "system_product", "system_family", "system_version", "system_sku",
		"system_serial", "cpu_model", "mainboard_vendor", "mainboard_product", "mainboard_serial", "mainboard_version",
		"mainboard_firmware_vendor", "mainboard_firmware_date", "mainboard_firmware_version", "chassis_vendor",
		"chassis_type", "chassis_serial", "chassis_version"} {
		out[k] = "Unknown"
	}
	hw := commissionedHW(m)
	if hw == nil {
		return out
	}
	bv, bver, bdate := hw.BIOS()
	set := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	set("system_vendor", hw.Vendor)
	set("system_product", hw.Product)
	set("system_serial", hw.Serial)
	set("cpu_model", hw.cpuModel())
	set("mainboard_vendor", hw.Vendor)
	set("mainboard_firmware_vendor", bv)
	set("mainboard_firmware_version", bver)
	set("mainboard_firmware_date", bdate)
	set("chassis_vendor", hw.Vendor)
	set("chassis_type", "Rack Mount Chassis")
	set("chassis_serial", hw.Serial)
	return out
}

// cpuSpeed is the machine read's cpu_speed (MHz; 0 before commissioning,
// as MAAS has it).
func cpuSpeed(m *machine) int {
	if hw := commissionedHW(m); hw != nil {
		return hw.cpuSpeed()
	}
	return 0
}

// nicFacts are an interface's commissioned facts as MAAS's interface JSON
// has them: link_connected, link_speed, interface_speed (Mbps),
// firmware_version, numa_node.
func nicFacts(m *machine, i *iface) (connected bool, speed, maxSpeed int, firmware any, numa int) {
	hw := commissionedHW(m)
	if hw == nil || i.Type != "physical" {
		return true, 0, 0, nil, 0 // MAAS's defaults: link_connected true, speeds 0
	}
	n := hw.nicOf(i.MAC)
	if n == nil {
		return true, 0, 0, nil, 0
	}
	return !n.LinkDown, n.speed(), n.maxSpeed(), nilIfEmpty(n.Firmware), n.NUMANode
}

// diskTags are the tags commissioning gives a physical disk: rotary and
// its rpm, or ssd; sata for a SATA disk (MAAS's hooks).
func diskTags(d *Disk) []string {
	var tags []string
	if d.Rotational {
		tags = append(tags, "rotary", strconv.Itoa(orInt(d.RPM, defaultDiskRPM))+"rpm")
	} else {
		tags = append(tags, "ssd")
	}
	if d.Bus == "scsi" && d.Rotational {
		tags = append(tags, "sata")
	}
	return tags
}

func orInt(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// opDetails answers the commissioning details as MAAS does: a BSON
// document {"lshw": binary, "lldp": binary} (application/bson), each
// value null before commissioning has captured it.
func (s *Server) opDetails(m *machine, _ *request) (any, *apiError) {
	doc := bson.D{{Name: "lshw", Value: nil}, {Name: "lldp", Value: nil}}
	if commissionedHW(m) != nil {
		doc[0].Value = []byte(lshwXML(m))
		doc[1].Value = []byte(lldpXML(m))
	}
	b, err := bson.Marshal(doc)
	if err != nil {
		return nil, errorf(500, "encode details: %v", err)
	}
	return rawBody{contentType: "application/bson", body: b}, nil
}

// lshwXML renders the hardware as `lshw -xml` does: the system, its
// core (firmware, CPUs, memory) and the PCI devices under a bridge:
// display (GPUs), network (NICs: businfo, logicalname, serial MAC,
// size/capacity in bit/s, driver, firmware and speed settings) and
// storage (NVMe controllers with their namespace disks; a SCSI
// controller with its disks).
func lshwXML(m *machine) string {
	hw := m.hw
	var b strings.Builder
	b.Grow(12 << 10) // a generated machine's is 8.5 KB: grown from nothing, it was ten buffers
	b.WriteString("<?xml version=\"1.0\" standalone=\"yes\" ?>\n<!-- generated by lshw-B.02.19.2 -->\n<list>\n")
	lshwCore(&b, m.Hostname, hw)
	wf(&b, "    <node id=\"pci\" claimed=\"true\" class=\"bridge\" handle=\"PCIBUS:0000:00\">\n     <description>Host bridge</description>\n     <physid>100</physid>\n     <businfo>pci@0000:00:00.0</businfo>\n")
	lshwGPUs(&b, hw)
	nics := append([]NIC(nil), hw.NICs...)
	sort.SliceStable(nics, func(i, j int) bool { return nics[i].PCI < nics[j].PCI })
	for n, nic := range nics {
		lshwNIC(&b, n, nic)
	}
	lshwStorage(&b, hw)
	b.WriteString("    </node>\n  </node>\n</node>\n</list>\n")
	return b.String()
}

// wf writes to b as fmt.Fprintf does (a strings.Builder does not fail).
func wf(b *strings.Builder, format string, args ...any) { fmt.Fprintf(b, format, args...) }

// lshwCore writes the system node's head and its core: firmware, CPUs and
// memory.
func lshwCore(b *strings.Builder, hostname string, hw *Hardware) {
	wf(b, "<node id=\"%s\" claimed=\"true\" class=\"system\" handle=\"DMI:0100\">\n", xmlText(hostname))
	wf(b, " <description>Rack Mount Chassis</description>\n <product>%s</product>\n <vendor>%s</vendor>\n <serial>%s</serial>\n <width units=\"bits\">64</width>\n",
		xmlText(hw.Product), xmlText(hw.Vendor), xmlText(hw.Serial))
	wf(b, " <configuration>\n  <setting id=\"boot\" value=\"normal\" />\n  <setting id=\"chassis\" value=\"rackmount\" />\n </configuration>\n")
	wf(b, "  <node id=\"core\" claimed=\"true\" class=\"bus\" handle=\"DMI:0200\">\n   <description>Motherboard</description>\n   <vendor>%s</vendor>\n   <physid>0</physid>\n", xmlText(hw.Vendor))
	bv, bver, bdate := hw.BIOS()
	wf(b, "    <node id=\"firmware\" claimed=\"true\" class=\"memory\" handle=\"DMI:0000\">\n     <description>BIOS</description>\n     <vendor>%s</vendor>\n     <physid>0</physid>\n     <version>%s</version>\n     <date>%s</date>\n     <size units=\"bytes\">65536</size>\n     <capacity units=\"bytes\">33554432</capacity>\n    </node>\n",
		xmlText(bv), xmlText(bver), xmlText(bdate))
	sockets, cores := hw.sockets(), hw.cores()
	for c := 0; c < sockets; c++ {
		wf(b, "    <node id=\"cpu:%d\" claimed=\"true\" class=\"processor\" handle=\"DMI:04%02X\">\n     <description>CPU</description>\n     <product>%s</product>\n     <physid>%d</physid>\n     <businfo>cpu@%d</businfo>\n     <slot>CPU%d</slot>\n     <size units=\"Hz\">%d</size>\n     <width units=\"bits\">64</width>\n",
			c, c, xmlText(hw.cpuModel()), 400+c, c, c+1, int64(hw.cpuSpeed())*1e6)
		wf(b, "     <configuration>\n      <setting id=\"cores\" value=\"%d\" />\n      <setting id=\"enabledcores\" value=\"%d\" />\n      <setting id=\"threads\" value=\"%d\" />\n     </configuration>\n    </node>\n",
			cores/sockets, cores/sockets, hw.CPUs/sockets)
	}
	wf(b, "    <node id=\"memory\" claimed=\"true\" class=\"memory\" handle=\"DMI:1000\">\n     <description>System Memory</description>\n     <physid>1000</physid>\n     <size units=\"bytes\">%d</size>\n    </node>\n",
		int64(hw.MemoryMiB)<<20)
}

// lshwGPUs writes the GPUs, as display devices.
func lshwGPUs(b *strings.Builder, hw *Hardware) {
	for n, g := range sortedGPUs(hw.GPUs) {
		wf(b, "      <node id=\"display:%d\" claimed=\"true\" class=\"display\" handle=\"PCI:%s\">\n       <description>3D controller</description>\n       <product>%s</product>\n       <vendor>%s</vendor>\n       <physid>%d</physid>\n       <businfo>pci@%s</businfo>\n       <version>a1</version>\n       <width units=\"bits\">64</width>\n",
			n, xmlText(g.PCI), xmlText(g.Product), xmlText(g.Vendor), n, xmlText(g.PCI))
		wf(b, "       <configuration>\n        <setting id=\"driver\" value=\"%s\" />\n        <setting id=\"latency\" value=\"0\" />\n        <setting id=\"numa_node\" value=\"%d\" />\n       </configuration>\n      </node>\n",
			xmlText(orDefault(g.Driver, "nvidia")), g.NUMANode)
	}
}

// lshwNIC writes NIC n, as a network device.
func lshwNIC(b *strings.Builder, n int, nic NIC) {
	wf(b, "      <node id=\"network:%d\" claimed=\"true\" class=\"network\" handle=\"PCI:%s\">\n       <description>Ethernet interface</description>\n       <product>%s</product>\n       <vendor>%s</vendor>\n       <physid>%d</physid>\n       <businfo>pci@%s</businfo>\n       <logicalname>%s</logicalname>\n       <serial>%s</serial>\n",
		n, xmlText(nic.PCI), xmlText(nic.Product), xmlText(nic.Vendor), n, xmlText(nic.PCI), xmlText(nic.Name), xmlText(strings.ToLower(nic.MAC)))
	if sp := nic.speed(); sp > 0 {
		wf(b, "       <size units=\"bit/s\">%d</size>\n", int64(sp)*1e6)
	}
	wf(b, "       <capacity units=\"bit/s\">%d</capacity>\n       <width units=\"bits\">64</width>\n", int64(nic.maxSpeed())*1e6)
	wf(b, "       <configuration>\n        <setting id=\"autonegotiation\" value=\"off\" />\n        <setting id=\"broadcast\" value=\"yes\" />\n        <setting id=\"driver\" value=\"%s\" />\n        <setting id=\"duplex\" value=\"full\" />\n",
		xmlText(nic.driver()))
	if nic.Firmware != "" {
		wf(b, "        <setting id=\"firmware\" value=\"%s\" />\n", xmlText(nic.Firmware))
	}
	link := "yes"
	if nic.LinkDown {
		link = "no"
	}
	wf(b, "        <setting id=\"latency\" value=\"0\" />\n        <setting id=\"link\" value=\"%s\" />\n        <setting id=\"multicast\" value=\"yes\" />\n", link)
	if sp := nic.speed(); sp > 0 {
		wf(b, "        <setting id=\"speed\" value=\"%s\" />\n", lshwSpeed(sp))
	}
	wf(b, "       </configuration>\n      </node>\n")
}

// lshwStorage writes the NVMe controllers with their namespaces, and a SCSI
// controller with the other disks.
func lshwStorage(b *strings.Builder, hw *Hardware) {
	nvme := 0
	var scsi []Disk
	for _, d := range hw.Disks {
		if d.Bus != "pci" && d.Bus != "nvme" {
			scsi = append(scsi, d)
			continue
		}
		wf(b, "      <node id=\"nvme:%d\" claimed=\"true\" class=\"storage\" handle=\"PCI:%s\">\n       <description>NVMe device</description>\n       <product>%s</product>\n       <vendor>%s</vendor>\n       <physid>0</physid>\n       <businfo>pci@%s</businfo>\n       <logicalname>/dev/nvme%d</logicalname>\n       <version>%s</version>\n       <serial>%s</serial>\n",
			nvme, xmlText(d.Addr), xmlText(d.Model), xmlText(d.Vendor), xmlText(d.Addr), nvme, xmlText(orDefault(d.Firmware, "1.0")), xmlText(d.Serial))
		wf(b, "       <configuration>\n        <setting id=\"driver\" value=\"nvme\" />\n        <setting id=\"latency\" value=\"0\" />\n        <setting id=\"nqn\" value=\"nqn.2014.08.org.nvmexpress:lab%s\" />\n        <setting id=\"state\" value=\"live\" />\n       </configuration>\n",
			xmlText(d.Serial))
		wf(b, "        <node id=\"namespace\" claimed=\"true\" class=\"disk\" handle=\"GUID:%s\">\n         <description>NVMe disk</description>\n         <physid>1</physid>\n         <businfo>nvme@%d:1</businfo>\n         <logicalname>/dev/%s</logicalname>\n         <size units=\"bytes\">%d</size>\n        </node>\n      </node>\n",
			xmlText(d.Serial), nvme, xmlText(d.Name), d.Size)
		nvme++
	}
	if len(scsi) > 0 {
		wf(b, "      <node id=\"sas\" claimed=\"true\" class=\"storage\" handle=\"PCI:0000:02:00.0\">\n       <description>Serial Attached SCSI controller</description>\n       <physid>0</physid>\n       <businfo>pci@0000:02:00.0</businfo>\n       <configuration>\n        <setting id=\"driver\" value=\"mpt3sas\" />\n       </configuration>\n")
		for n, d := range scsi {
			rot := ""
			if d.Rotational {
				rot = fmt.Sprintf("        <setting id=\"rpm\" value=\"%d\" />\n", orInt(d.RPM, defaultDiskRPM))
			}
			wf(b, "        <node id=\"disk:%d\" claimed=\"true\" class=\"disk\" handle=\"SCSI:%s\">\n         <description>ATA Disk</description>\n         <product>%s</product>\n         <vendor>%s</vendor>\n         <physid>%d</physid>\n         <businfo>scsi@%s</businfo>\n         <logicalname>/dev/%s</logicalname>\n         <version>%s</version>\n         <serial>%s</serial>\n         <size units=\"bytes\">%d</size>\n         <configuration>\n        <setting id=\"logicalsectorsize\" value=\"512\" />\n%s        <setting id=\"sectorsize\" value=\"4096\" />\n         </configuration>\n        </node>\n",
				n, xmlText(lshwSCSI(d.Addr)), xmlText(d.Model), xmlText(d.Vendor), n, xmlText(lshwSCSI(d.Addr)), xmlText(d.Name), xmlText(orDefault(d.Firmware, "1.0")), xmlText(d.Serial), d.Size, rot)
		}
		wf(b, "      </node>\n")
	}
}

// lshwSpeed writes a speed as lshw does: 25Gbit/s, 100Mbit/s.
func lshwSpeed(mbps int) string {
	if mbps >= 1000 && mbps%1000 == 0 {
		return strconv.Itoa(mbps/1000) + "Gbit/s"
	}
	return strconv.Itoa(mbps) + "Mbit/s"
}

// lshwSCSI turns a SCSI address H:C:T:L into lshw's businfo address
// H:C.T.L.
func lshwSCSI(addr string) string {
	p := strings.Split(addr, ":")
	if len(p) != 4 {
		return addr
	}
	return p[0] + ":" + p[1] + "." + p[2] + "." + p[3]
}

func sortedGPUs(g []PCIDevice) []PCIDevice {
	out := append([]PCIDevice(nil), g...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].PCI < out[j].PCI })
	return out
}

// lldpXML renders the LLDP neighbours as `lldpctl -f xml` does: one
// interface element per NIC that hears a neighbour, its chassis (ID,
// SysName) and port (PortID as ifname, PortDescr).
func lldpXML(m *machine) string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<lldp label=\"LLDP neighbors\">\n")
	rid := 0
	for _, nic := range m.hw.NICs {
		nb := nic.Neighbor
		if nb == nil || nic.LinkDown {
			continue
		}
		rid++
		fmt.Fprintf(&b, " <interface label=\"Interface\" name=\"%s\" via=\"LLDP\" rid=\"%d\" age=\"0 day, 00:01:00\">\n", xmlText(nic.Name), rid)
		fmt.Fprintf(&b, "  <chassis label=\"Chassis\">\n   <id label=\"ChassisID\" type=\"mac\">%s</id>\n   <name label=\"SysName\">%s</name>\n   <descr label=\"SysDescr\">Lab switch</descr>\n   <capability label=\"Capability\" type=\"Bridge\" enabled=\"on\"/>\n   <capability label=\"Capability\" type=\"Router\" enabled=\"off\"/>\n  </chassis>\n",
			xmlText(nb.ChassisID), xmlText(nb.SysName))
		fmt.Fprintf(&b, "  <port label=\"Port\">\n   <id label=\"PortID\" type=\"ifname\">%s</id>\n   <descr label=\"PortDescr\">%s</descr>\n   <ttl label=\"TTL\">120</ttl>\n  </port>\n </interface>\n",
			xmlText(nb.PortID), xmlText(orDefault(nb.PortDescr, nb.PortID)))
	}
	b.WriteString("</lldp>\n")
	return b.String()
}

// xmlText escapes XML character data and attribute values, dropping what XML
// cannot carry (control characters, invalid UTF-8).
func xmlText(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (r < 0x20 && r != '\t' && r != '\n' && r != '\r') {
			clean = false
			break
		}
	}
	if !clean {
		s = strings.Map(func(r rune) rune {
			if r == utf8.RuneError || (r < 0x20 && r != '\t' && r != '\n' && r != '\r') {
				return -1
			}
			return r
		}, s)
	}
	return xmlEscaper.Replace(s)
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")
