package maas

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/juju/mgo/v2/bson"
)

// gpuBox makes the i-th lab server a two-socket GPU machine: four GPUs,
// NIC details and LLDP neighbours, a rotational SATA disk.
func gpuBox(l *simLab, i int) *Hardware {
	h := l.hw[strings.ToLower(labMAC(i, 1))]
	h.Serial, h.CPUModel, h.CPUSockets, h.CPUCores, h.CPUs, h.CPUSpeedMHz = "SN-GPU-1", "Intel(R) Xeon(R) Platinum 8480+", 2, 112, 224, 2000
	h.MemoryMiB = 2 << 20
	h.BIOSVendor, h.BIOSVersion, h.BIOSDate, h.BMCVersion = "Dell Inc.", "2.3.5", "06/01/2026", "7.10"
	for n, addr := range []string{"0000:18:00.0", "0000:2a:00.0", "0000:9a:00.0", "0000:ab:00.0"} {
		h.GPUs = append(h.GPUs, PCIDevice{PCI: addr, Vendor: "NVIDIA Corporation", Product: "GH100 [H100 SXM5 80GB]",
			VendorID: "10de", ProductID: "2330", Driver: "nvidia", NUMANode: n / 2})
	}
	h.NICs[0].Driver, h.NICs[0].Firmware, h.NICs[0].SpeedMbps, h.NICs[0].MaxMbps = "i40e", "9.20 0x8000d95e 1.3353.0", 10000, 10000
	h.NICs[0].Neighbor = &LLDPNeighbor{ChassisID: "aa:bb:cc:00:00:01", SysName: "leaf-1", PortID: "Ethernet1", PortDescr: "Ethernet1"}
	h.NICs[1].Driver, h.NICs[1].SpeedMbps, h.NICs[1].MaxMbps, h.NICs[1].NUMANode = "mlx5_core", 1000, 100000, 1
	h.NICs[1].Neighbor = &LLDPNeighbor{ChassisID: "aa:bb:cc:00:00:02", SysName: "leaf-2", PortID: "Ethernet7"}
	h.Disks[0].Rotational = true
	return h
}

// TestHardwareMachineRead: after commissioning, the machine read carries
// the hardware in MAAS's fields and types (hardware_info strings,
// cpu_count, cpu_speed, memory, one NUMA node per socket); before it,
// hardware_info is "Unknown" and cpu_speed 0.
func TestHardwareMachineRead(t *testing.T) {
	l := newSimLab(t, nil)
	gpuBox(l, 1)
	id := l.enlist(1, "gpu-1")
	m := l.machine(id)
	hi := m["hardware_info"].(map[string]any)
	if hi["system_vendor"] != "Unknown" || hi["cpu_model"] != "Unknown" || m["cpu_speed"].(float64) != 0 {
		t.Errorf("before commissioning: hardware_info %v, cpu_speed %v", hi, m["cpu_speed"])
	}
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=commission", nil, nil)
	m = l.waitStatus(id, StatusReady)
	checkMachineJSON(t, "commissioned GPU machine", m)
	hi = m["hardware_info"].(map[string]any)
	want := map[string]string{"system_vendor": "Dell Inc.", "system_product": "PowerEdge R650", "system_serial": "SN-GPU-1",
		"cpu_model": "Intel(R) Xeon(R) Platinum 8480+", "mainboard_firmware_version": "2.3.5", "mainboard_firmware_date": "06/01/2026",
		"mainboard_firmware_vendor": "Dell Inc.", "mainboard_vendor": "Dell Inc."}
	for k, v := range want {
		if hi[k] != v {
			t.Errorf("hardware_info[%s] = %v, want %q", k, hi[k], v)
		}
	}
	for k, v := range hi {
		if _, ok := v.(string); !ok {
			t.Errorf("hardware_info[%s] is %T, want a string", k, v)
		}
	}
	if m["cpu_count"].(float64) != 224 || m["cpu_speed"].(float64) != 2000 || m["memory"].(float64) != 2<<20 {
		t.Errorf("cpu_count %v cpu_speed %v memory %v", m["cpu_count"], m["cpu_speed"], m["memory"])
	}
	numa := m["numanode_set"].([]any)
	if len(numa) != 2 || len(numa[0].(map[string]any)["cores"].([]any)) != 112 || numa[1].(map[string]any)["index"].(float64) != 1 {
		t.Errorf("numanode_set = %v, want two nodes of 112 cores", numa)
	}
}

// TestHardwareInterfacesAndDisks: the interfaces read has each NIC's
// link_speed and interface_speed (Mbps, numbers), link_connected,
// firmware_version and numa_node; the block devices read tags disks as
// MAAS's commissioning does (rotary and rpm, or ssd) with their firmware.
func TestHardwareInterfacesAndDisks(t *testing.T) {
	l := newSimLab(t, nil)
	h := gpuBox(l, 1)
	h.NICs[1].LinkDown = true
	id := l.ready(1, "gpu-1")
	var ifaces []map[string]any
	l.must(http.StatusOK, "GET", "/nodes/"+id+"/interfaces/", nil, &ifaces)
	byName := map[string]map[string]any{}
	for _, i := range ifaces {
		byName[i["name"].(string)] = i
		for _, k := range []string{"link_speed", "interface_speed", "numa_node"} {
			if _, ok := i[k].(float64); !ok {
				t.Errorf("%s %s is %T, want a number", i["name"], k, i[k])
			}
		}
		if _, ok := i["link_connected"].(bool); !ok {
			t.Errorf("%s link_connected is %T", i["name"], i["link_connected"])
		}
	}
	e0, e1 := byName["ens3f0"], byName["ens3f1"]
	if e0 == nil || e1 == nil {
		t.Fatalf("interfaces %v", ifaces)
	}
	if e0["link_speed"].(float64) != 10000 || e0["interface_speed"].(float64) != 10000 || e0["link_connected"] != true ||
		e0["firmware_version"] != "9.20 0x8000d95e 1.3353.0" || e0["vendor"] != "Intel Corporation" {
		t.Errorf("ens3f0 = %v", e0)
	}
	if e1["link_speed"].(float64) != 0 || e1["interface_speed"].(float64) != 100000 || e1["link_connected"] != false ||
		e1["firmware_version"] != nil || e1["numa_node"].(float64) != 1 {
		t.Errorf("ens3f1 (no carrier) = %v", e1)
	}
	var disks []map[string]any
	l.must(http.StatusOK, "GET", "/nodes/"+id+"/blockdevices/", nil, &disks)
	tags := map[string]any{}
	for _, d := range disks {
		tags[d["name"].(string)] = d["tags"]
		if d["firmware_version"] == nil || d["id_path"] == nil {
			t.Errorf("%s: firmware_version %v id_path %v", d["name"], d["firmware_version"], d["id_path"])
		}
	}
	if !reflect.DeepEqual(tags["sda"], []any{"rotary", "7200rpm", "sata"}) || !reflect.DeepEqual(tags["nvme0n1"], []any{"ssd"}) {
		t.Errorf("disk tags %v", tags)
	}
	// The PCI inventory lists the GPUs as GPU devices on their NUMA node.
	var devs []map[string]any
	l.must(http.StatusOK, "GET", "/nodes/"+id+"/devices/", url.Values{"hardware_type": {"5"}}, &devs)
	got := map[string]float64{}
	for _, d := range devs {
		got[d["pci_address"].(string)] = d["numa_node"].(float64)
		if d["vendor_id"] != "10de" || d["product_id"] != "2330" || d["commissioning_driver"] != "nvidia" || d["hardware_type_name"] != "GPU" {
			t.Errorf("GPU device %v", d)
		}
	}
	if diff := cmp.Diff(map[string]float64{"0000:18:00.0": 0, "0000:2a:00.0": 0, "0000:9a:00.0": 1, "0000:ab:00.0": 1}, got); diff != "" {
		t.Errorf("GPU devices (-want +got):\n%s", diff)
	}
}

// lshwNode is lshw's XML element, as far as the test reads it.
type lshwNode struct {
	ID          string     `xml:"id,attr"`
	Class       string     `xml:"class,attr"`
	Product     string     `xml:"product"`
	Vendor      string     `xml:"vendor"`
	Serial      string     `xml:"serial"`
	Version     string     `xml:"version"`
	BusInfo     string     `xml:"businfo"`
	LogicalName string     `xml:"logicalname"`
	Size        int64      `xml:"size"`
	Capacity    int64      `xml:"capacity"`
	Settings    []lshwSet  `xml:"configuration>setting"`
	Nodes       []lshwNode `xml:"node"`
}

type lshwSet struct {
	ID    string `xml:"id,attr"`
	Value string `xml:"value,attr"`
}

func (n lshwNode) setting(id string) string {
	for _, s := range n.Settings {
		if s.ID == id {
			return s.Value
		}
	}
	return ""
}

func (n lshwNode) walk(fn func(lshwNode, *lshwNode), parent *lshwNode) {
	fn(n, parent)
	for _, c := range n.Nodes {
		c.walk(fn, &n)
	}
}

// lldpDoc is lldpctl's XML.
type lldpDoc struct {
	XMLName    xml.Name `xml:"lldp"`
	Interfaces []struct {
		Name    string `xml:"name,attr"`
		Chassis struct {
			ID   string `xml:"id"`
			Name string `xml:"name"`
		} `xml:"chassis"`
		Port struct {
			ID struct {
				Type  string `xml:"type,attr"`
				Value string `xml:",chardata"`
			} `xml:"id"`
			Descr string `xml:"descr"`
		} `xml:"port"`
	} `xml:"interface"`
}

// details fetches op=details and decodes the BSON document.
func details(t *testing.T, l *simLab, id string) map[string]any {
	t.Helper()
	r := l.do("GET", "/machines/"+id+"/?op=details", nil)
	if r.code != http.StatusOK || r.header.Get("Content-Type") != "application/bson" {
		t.Fatalf("details: %d %s", r.code, r.header.Get("Content-Type"))
	}
	var doc map[string]any
	if err := bson.Unmarshal(r.body, &doc); err != nil {
		t.Fatalf("details is no BSON document: %v", err)
	}
	if len(doc) != 2 {
		t.Errorf("details keys %v, want lshw and lldp", doc)
	}
	return doc
}

// TestHardwareDetails: op=details is a BSON document whose lshw and
// lldp are null before commissioning and, after it, binary XML in
// lshw's and lldpctl's schemas that parse back to the hardware.
func TestHardwareDetails(t *testing.T) {
	l := newSimLab(t, nil)
	h := gpuBox(l, 1)
	id := l.enlist(1, "gpu-1")
	if doc := details(t, l, id); doc["lshw"] != nil || doc["lldp"] != nil {
		t.Errorf("details before commissioning = %v, want nulls", doc)
	}
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=commission", nil, nil)
	l.waitStatus(id, StatusReady)
	doc := details(t, l, id)
	if r := l.do("GET", "/nodes/"+id+"/?op=details", nil); r.code != http.StatusOK || r.header.Get("Content-Type") != "application/bson" {
		t.Errorf("nodes/{id}/?op=details: %d %s", r.code, r.header.Get("Content-Type"))
	} else if viaMachines := l.do("GET", "/machines/"+id+"/?op=details", nil); string(viaMachines.body) != string(r.body) {
		t.Error("nodes and machines details differ")
	}
	lshwB, ok1 := doc["lshw"].([]byte)
	lldpB, ok2 := doc["lldp"].([]byte)
	if !ok1 || !ok2 {
		t.Fatalf("details values are %T and %T, want binary", doc["lshw"], doc["lldp"])
	}
	var list struct {
		Nodes []lshwNode `xml:"node"`
	}
	if err := xml.Unmarshal(lshwB, &list); err != nil || len(list.Nodes) != 1 {
		t.Fatalf("lshw XML: %v (%d systems)", err, len(list.Nodes))
	}
	sys := list.Nodes[0]
	if sys.Class != "system" || sys.Vendor != h.Vendor || sys.Product != h.Product || sys.Serial != h.Serial {
		t.Errorf("system node %+v", sys)
	}
	type nicGot struct{ PCI, Name, MAC, Driver, Firmware, Speed string }
	var gpus, bios, cpus []string
	nics := map[string]nicGot{}
	disks := map[string]string{} // logical name -> bus address
	var cores, threads int
	sys.walk(func(n lshwNode, parent *lshwNode) {
		switch {
		case n.Class == "display":
			gpus = append(gpus, n.BusInfo+" "+n.Vendor+" "+n.Product+" numa="+n.setting("numa_node")+" driver="+n.setting("driver"))
		case n.Class == "memory" && n.ID == "firmware":
			bios = append(bios, n.Vendor, n.Version)
		case n.Class == "processor":
			cpus = append(cpus, n.Product)
			c, _ := strconv.Atoi(n.setting("cores"))
			th, _ := strconv.Atoi(n.setting("threads"))
			cores, threads = cores+c, threads+th
		case n.Class == "network":
			nics[n.LogicalName] = nicGot{n.BusInfo, n.LogicalName, n.Serial, n.setting("driver"), n.setting("firmware"), n.setting("speed")}
			if n.Capacity <= 0 {
				t.Errorf("network %s capacity %d", n.LogicalName, n.Capacity)
			}
		case n.Class == "disk" && parent != nil && parent.Class == "storage" && strings.HasPrefix(n.BusInfo, "nvme@"):
			disks[n.LogicalName] = parent.BusInfo
		case n.Class == "disk":
			disks[n.LogicalName] = n.BusInfo
		}
	}, nil)
	wantGPUs := []string{
		"pci@0000:18:00.0 NVIDIA Corporation GH100 [H100 SXM5 80GB] numa=0 driver=nvidia",
		"pci@0000:2a:00.0 NVIDIA Corporation GH100 [H100 SXM5 80GB] numa=0 driver=nvidia",
		"pci@0000:9a:00.0 NVIDIA Corporation GH100 [H100 SXM5 80GB] numa=1 driver=nvidia",
		"pci@0000:ab:00.0 NVIDIA Corporation GH100 [H100 SXM5 80GB] numa=1 driver=nvidia",
	}
	if diff := cmp.Diff(wantGPUs, gpus); diff != "" {
		t.Errorf("lshw GPUs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Dell Inc.", "2.3.5"}, bios); diff != "" {
		t.Errorf("lshw BIOS (-want +got):\n%s", diff)
	}
	if len(cpus) != 2 || cpus[0] != h.CPUModel || cores != 112 || threads != 224 {
		t.Errorf("lshw CPUs %v cores %d threads %d", cpus, cores, threads)
	}
	wantNICs := map[string]nicGot{
		"ens3f0": {"pci@0000:3b:00.0", "ens3f0", labMAC(1, 1), "i40e", "9.20 0x8000d95e 1.3353.0", "10Gbit/s"},
		"ens3f1": {"pci@0000:3b:00.1", "ens3f1", labMAC(1, 2), "mlx5_core", "", "1Gbit/s"},
	}
	if diff := cmp.Diff(wantNICs, nics); diff != "" {
		t.Errorf("lshw NICs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"/dev/sda": "scsi@2:0.0.0", "/dev/nvme0n1": "pci@0000:5e:00.0"}, disks); diff != "" {
		t.Errorf("lshw disks (-want +got):\n%s", diff)
	}
	var ld lldpDoc
	if err := xml.Unmarshal(lldpB, &ld); err != nil {
		t.Fatalf("lldp XML: %v", err)
	}
	got := map[string]string{}
	for _, i := range ld.Interfaces {
		got[i.Name] = fmt.Sprintf("%s %s %s(%s) %s", i.Chassis.Name, i.Chassis.ID, i.Port.ID.Value, i.Port.ID.Type, i.Port.Descr)
	}
	want := map[string]string{"ens3f0": "leaf-1 aa:bb:cc:00:00:01 Ethernet1(ifname) Ethernet1",
		"ens3f1": "leaf-2 aa:bb:cc:00:00:02 Ethernet7(ifname) Ethernet7"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lldp neighbours (-want +got):\n%s", diff)
	}
}

// TestHardwareXMLEscapes: names with XML's special characters and
// control characters still give well-formed documents.
func TestHardwareXMLEscapes(t *testing.T) {
	m := &machine{Hostname: "a<b", commissioned: true, hw: &Hardware{Vendor: "A&B \"x\"", Product: "p\x01q'",
		NICs:  []NIC{{MAC: "52:54:00:00:00:01", Name: "e<0", Product: "]]>", Neighbor: &LLDPNeighbor{SysName: "s&w", PortID: "<p>"}}},
		GPUs:  []PCIDevice{{PCI: "0000:01:00.0", Product: "\xff\xfe"}},
		Disks: []Disk{{Name: "sda", Bus: "scsi", Addr: "bad", Model: "m&m", Rotational: true}}}}
	var v any
	for _, doc := range []string{lshwXML(m), lldpXML(m)} {
		dec := xml.NewDecoder(strings.NewReader(doc))
		for {
			tok, err := dec.Token()
			if err != nil {
				if err.Error() != "EOF" {
					t.Errorf("not well-formed: %v\n%s", err, doc)
				}
				break
			}
			v = tok
		}
	}
	_ = v
}

// TestFaultsApplyHardware: each hardware fault changes exactly what it
// says.
func TestFaultsApplyHardware(t *testing.T) {
	base := func() Hardware {
		return Hardware{BIOSVersion: "2.1.0", BMCVersion: "5.10",
			GPUs: []PCIDevice{{PCI: "0000:9a:00.0"}, {PCI: "0000:18:00.0"}, {PCI: "0000:db:00.0"}, {PCI: "0000:2a:00.0"}},
			NICs: []NIC{
				{Alias: "pxe", MAC: "m0", SpeedMbps: 25000, MaxMbps: 25000, Neighbor: &LLDPNeighbor{SysName: "leaf-1", PortID: "Ethernet1"}},
				{Alias: "data0", MAC: "m1", SpeedMbps: 100000, MaxMbps: 100000, Neighbor: &LLDPNeighbor{SysName: "leaf-1", PortID: "Ethernet2"}},
				{Alias: "data1", MAC: "m2", SpeedMbps: 100000, MaxMbps: 100000, Neighbor: &LLDPNeighbor{SysName: "leaf-2", PortID: "Ethernet2"}},
			}}
	}
	cases := []struct {
		name string
		f    MachineFaults
		want func(*Hardware)
	}{
		{"none", MachineFaults{}, func(*Hardware) {}},
		{"missing GPUs: the highest PCI addresses", MachineFaults{MissingGPUs: 2}, func(h *Hardware) {
			h.GPUs = []PCIDevice{{PCI: "0000:18:00.0"}, {PCI: "0000:2a:00.0"}}
		}},
		{"more missing GPUs than there are", MachineFaults{MissingGPUs: 9}, func(h *Hardware) { h.GPUs = []PCIDevice{} }},
		{"NIC speed", MachineFaults{NICSpeedMbps: map[string]int{"data0": 10000, "nosuch": 1}}, func(h *Hardware) {
			h.NICs[1].SpeedMbps = 10000
		}},
		{"swapped cables", MachineFaults{SwapCables: []string{"data0", "data1"}}, func(h *Hardware) {
			h.NICs[1].Neighbor, h.NICs[2].Neighbor = h.NICs[2].Neighbor, h.NICs[1].Neighbor
		}},
		{"firmware", MachineFaults{Firmware: &FirmwareFault{BIOS: "1.0"}}, func(h *Hardware) { h.BIOSVersion = "1.0" }},
		{"BMC firmware", MachineFaults{Firmware: &FirmwareFault{BMC: "3.01"}}, func(h *Hardware) { h.BMCVersion = "3.01" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, want := base(), base()
			tc.f.ApplyHardware(&got)
			tc.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestFaultsApplyDoesNotAlias: applying faults to a copy of a Hardware
// leaves the original's NICs alone.
func TestFaultsApplyDoesNotAlias(t *testing.T) {
	orig := Hardware{NICs: []NIC{{Alias: "a", SpeedMbps: 25000}, {Alias: "b"}}}
	cp := orig
	MachineFaults{NICSpeedMbps: map[string]int{"a": 1000}, SwapCables: []string{"a", "b"}}.ApplyHardware(&cp)
	if orig.NICs[0].SpeedMbps != 25000 || cp.NICs[0].SpeedMbps != 1000 {
		t.Errorf("orig %v copy %v", orig.NICs, cp.NICs)
	}
}

// TestParseFaults: the hardware faults parse; bad ones are refused.
func TestParseFaults(t *testing.T) {
	f, err := ParseFaults([]byte(`{"machines": {"gpu-1": {"missingGPUs": 2, "nicSpeedMbps": {"data0": 10000},
		"swapCables": ["data0", "data1"], "firmware": {"bios": "1.0", "bmc": "3.01"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := MachineFaults{MissingGPUs: 2, NICSpeedMbps: map[string]int{"data0": 10000}, SwapCables: []string{"data0", "data1"},
		Firmware: &FirmwareFault{BIOS: "1.0", BMC: "3.01"}}
	if diff := cmp.Diff(want, f.Machine("gpu-1")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if (*Faults)(nil).Machine("x").MissingGPUs != 0 || f.Machine("other").MissingGPUs != 0 {
		t.Error("faults of a machine the file does not name")
	}
	for _, bad := range []string{
		`{"machines": {"a": {"missingGPUs": -1}}}`,
		`{"machines": {"a": {"swapCables": ["x"]}}}`,
		`{"machines": {"a": {"swapCables": ["x", "x"]}}}`,
		`{"machines": {"a": {"swapCables": ["x", "y", "z"]}}}`,
		`{"machines": {"a": {"nicSpeedMbps": {"x": 0}}}}`,
		`{"machines": {"a": {"nicSpeedMbps": {"": 10}}}}`,
		`{"machines": {"a": {"nicSpeedMbps": {"x": 99999999}}}}`,
		`{"machines": {"a": {"firmware": {"bios": "` + strings.Repeat("9", 300) + `"}}}}`,
		`{"machines": {"a": {"gpus": 1}}}`,
		`{"ops": {"*": {"error500": 2}}}`,
		`{} {}`,
		`{"machines": {"a": {}}}` + strings.Repeat(" ", MaxFaultsFileBytes),
	} {
		if _, err := ParseFaults([]byte(bad)); err == nil {
			t.Errorf("ParseFaults(%.80q) accepted", bad)
		}
	}
}

// FuzzParseFaults: no input panics; what parses passes its own checks
// again and applies to a machine without panicking.
func FuzzParseFaults(f *testing.F) {
	f.Add([]byte(`{"machines": {"gpu-1": {"missingGPUs": 2, "nicSpeedMbps": {"data0": 10000}, "swapCables": ["data0", "data1"], "firmware": {"bios": "1.0"}}}}`))
	f.Add([]byte(`{"seed": 3, "ops": {"POST deploy": {"error500": 0.5, "latency": 1000}}}`))
	f.Add([]byte(`{"machines": {"a": {"failDeploy": 1}}}`))
	f.Add([]byte(`{"uploadStall": {"atBytes": 16777216, "times": 1, "for": 600000000000}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := ParseFaults(b)
		if err != nil {
			return
		}
		if err := fs.check(); err != nil {
			t.Fatalf("parsed faults fail their check: %v", err)
		}
		if st := fs.UploadStall; st != nil && newInjector(fs).stallUpload(st.AtBytes) < 0 {
			t.Fatalf("a stall of negative length: %+v", st)
		}
		for name, mf := range fs.Machines {
			hw := Hardware{GPUs: []PCIDevice{{PCI: "0000:18:00.0"}}, NICs: []NIC{{Alias: "data0"}, {Alias: "data1"}}}
			mf.ApplyHardware(&hw)
			if len(hw.GPUs) > 1 || len(hw.NICs) != 2 {
				t.Fatalf("%s: faults added hardware: %+v", name, hw)
			}
		}
	})
}
