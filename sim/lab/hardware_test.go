package lab

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/juju/gomaasapi/v2"
	"github.com/juju/mgo/v2/bson"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/sim/maas"
)

// gpuDesign is the example site with its first node a GPU server: a
// profile that expects CPUs, memory, 8 GPUs, NIC speeds and drivers, a
// disk size and model and firmware minimums; the node cabled and
// constrained.
func gpuDesign(t *testing.T) (*design.Design, string) {
	d := exampleDesign(t)
	name := d.NodeNames()[0]
	n := d.Nodes[name]
	hp := *n.Spec.Hardware
	hp.Expect = &design.HardwareExpect{
		CPU:       &design.ExpectCPU{Count: 128, Model: "EPYC 9[0-9]{3}"},
		MemoryMin: "1.5Ti",
		GPUs:      &design.ExpectGPUs{Count: 8, Model: "H100.*SXM"},
		NICs:      map[string]design.ExpectNIC{"data0": {SpeedMinMbps: 100000, Driver: "mlx5_core"}, "data1": {SpeedMinMbps: 100000}},
		Firmware:  &design.ExpectFirmware{BIOSMin: "2.10.3", BMCMin: "5.2"},
		LLDP:      true,
	}
	n.Spec.Hardware = &hp
	disk := sortedKeys(n.Spec.Storage.Devices)[0]
	hp.Expect.Disks = map[string]design.ExpectDisk{disk: {SizeMin: "3.84t", Model: "^Acme-[A-Z]+7$"}}
	n.Spec.Cabling = map[string]design.Cable{"data0": {Switch: "leaf-r01-a", Port: "Ethernet12"}, "data1": {Switch: "leaf-r01-b", Port: "Ethernet12"},
		"pxe0": {Switch: "mgmt-r01", Port: "Gi1/0/3"}}
	n.Spec.Constraints = &design.Constraints{Zone: "rack-01", Pool: "gpu", Tags: []string{"gpu"}}
	return d, name
}

// TestLabHardwareFromDesign: the machine of a node has what its profile
// expects and its cabling says.
func TestLabHardwareFromDesign(t *testing.T) {
	d, name := gpuDesign(t)
	n := d.Nodes[name]
	sp, err := nodeSpec(d, n, ResolveSecret)
	if err != nil {
		t.Fatal(err)
	}
	hw := sp.hw
	exp := n.Spec.Hardware.Expect
	if hw.Vendor != n.Spec.Hardware.Vendor || hw.Product != n.Spec.Hardware.Model || hw.Serial == "" {
		t.Errorf("system %q %q %q", hw.Vendor, hw.Product, hw.Serial)
	}
	if hw.CPUs != 128 || !regexp.MustCompile(exp.CPU.Model).MatchString(hw.CPUModel) || hw.CPUSockets != 2 || hw.CPUCores != 64 {
		t.Errorf("CPU %d %q sockets %d cores %d", hw.CPUs, hw.CPUModel, hw.CPUSockets, hw.CPUCores)
	}
	if hw.MemoryMiB != 1536*1024 {
		t.Errorf("memory %d MiB", hw.MemoryMiB)
	}
	if len(hw.GPUs) != 8 {
		t.Fatalf("GPUs %v", hw.GPUs)
	}
	seen := map[string]bool{}
	for _, nic := range hw.NICs {
		seen[nic.PCI] = true
	}
	numa := map[int]int{}
	for _, g := range hw.GPUs {
		if !regexp.MustCompile(exp.GPUs.Model).MatchString(g.Product) || g.VendorID != "10de" || seen[g.PCI] {
			t.Errorf("GPU %+v", g)
		}
		seen[g.PCI] = true
		numa[g.NUMANode]++
	}
	if numa[0] != 4 || numa[1] != 4 {
		t.Errorf("GPUs per NUMA node %v", numa)
	}
	if hw.BIOSVersion != "2.10.3" || hw.BMCVersion != defaultBMC {
		t.Errorf("firmware BIOS %q BMC %q (want the minimum BIOS, the lab's newer BMC)", hw.BIOSVersion, hw.BMCVersion)
	}
	aliases := n.Spec.Hardware.DeviceAliases
	nics := map[string]maas.NIC{}
	for _, nic := range hw.NICs {
		nics[nic.Alias] = nic
	}
	for _, a := range []string{"pxe0", "data0", "data1"} {
		nic, ok := nics[a]
		if !ok || nic.PCI != aliases[a].Address || nic.Firmware == "" || nic.Neighbor == nil {
			t.Errorf("NIC %s: %+v", a, nic)
			continue
		}
		if c := n.Spec.Cabling[a]; nic.Neighbor.SysName != c.Switch || nic.Neighbor.PortID != c.Port || nic.Neighbor.ChassisID == "" {
			t.Errorf("NIC %s neighbour %+v, want %+v", a, nic.Neighbor, c)
		}
	}
	if nics["data0"].Driver != "mlx5_core" || nics["data0"].SpeedMbps != 100000 || nics["data1"].SpeedMbps != 100000 || nics["pxe0"].SpeedMbps != 25000 || nics["data1"].Driver != "ice" {
		t.Errorf("NIC speeds/drivers: %+v", nics)
	}
	if nics["data0"].Vendor != "Mellanox Technologies" || nics["data1"].Product != "Ethernet Controller E810-C for QSFP" || nics["pxe0"].Product != "Ethernet Controller E810-XXV" {
		t.Errorf("NIC models follow the driver and speed: %+v", nics)
	}
	disks := map[string]maas.Disk{}
	for _, dk := range hw.Disks {
		disks[dk.Alias] = dk
	}
	for alias, e := range exp.Disks {
		if dd := disks[alias]; dd.Size < 3840e9 || !regexp.MustCompile(e.Model).MatchString(dd.Model) || dd.Addr != aliases[alias].Address {
			t.Errorf("disk %s: %+v", alias, dd)
		}
	}
	if hw.Zone != "rack-01" || hw.Pool != "gpu" || !cmp.Equal(hw.Tags, []string{"gpu"}) {
		t.Errorf("placement %q %q %v", hw.Zone, hw.Pool, hw.Tags)
	}
	// A node without expectations gets the lab's defaults.
	other := d.Nodes[d.NodeNames()[1]]
	sp2, _ := nodeSpec(d, other, ResolveSecret)
	if len(sp2.hw.GPUs) != 0 || sp2.hw.CPUs != defaultCPUs || sp2.hw.BIOSVersion != defaultBIOS {
		t.Errorf("default hardware %+v", sp2.hw)
	}
}

// TestLabHardwareFaults: the lab builds a machine as its faults say.
func TestLabHardwareFaults(t *testing.T) {
	d, name := gpuDesign(t)
	f, err := maas.ParseFaults([]byte(`{"machines": {"` + name + `": {"missingGPUs": 2, "nicSpeedMbps": {"data1": 10000},
		"swapCables": ["data0", "data1"], "firmware": {"bios": "1.0", "bmc": "3.01"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	clean, _ := nodeSpec(d, d.Nodes[name], ResolveSecret)
	l, err := Start(t.Context(), Config{Design: d, TimeScale: 0.0005, Seed: 3, Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	hw := l.Machine(name).Hardware
	want := clean.hw
	want.GPUs = want.GPUs[:6] // the two of highest PCI address are gone
	want.BIOSVersion, want.BMCVersion = "1.0", "3.01"
	want.NICs = append([]maas.NIC(nil), want.NICs...)
	var d0, d1 int
	for i, nic := range want.NICs {
		switch nic.Alias {
		case "data0":
			d0 = i
		case "data1":
			d1 = i
			want.NICs[i].SpeedMbps = 10000
		}
	}
	want.NICs[d0].Neighbor, want.NICs[d1].Neighbor = want.NICs[d1].Neighbor, want.NICs[d0].Neighbor
	if diff := cmp.Diff(want, hw); diff != "" {
		t.Errorf("faulty machine (-want +got):\n%s", diff)
	}
	if hw.GPUs[5].PCI != "0000:ab:00.0" {
		t.Errorf("GPUs left %v", hw.GPUs)
	}
	// The other machines are as designed.
	other := d.NodeNames()[1]
	sp, _ := nodeSpec(d, d.Nodes[other], ResolveSecret)
	if diff := cmp.Diff(sp.hw, l.Machine(other).Hardware); diff != "" {
		t.Errorf("a machine without faults changed:\n%s", diff)
	}
}

func TestSampleMatches(t *testing.T) {
	for _, p := range []string{"H100", "^A[0-9]{3}$", "(foo|bar)+baz", `\d+GB`, "x*y?z", "[^a-z]{2}", "(?i)tesla"} {
		s, ok := sample(p)
		if !ok || !regexp.MustCompile(p).MatchString(s) {
			t.Errorf("sample(%q) = %q, %v", p, s, ok)
		}
	}
	if compareVersions("2.10.3", "2.9") <= 0 || compareVersions("1.0", "1.0.0") != 0 || compareVersions("1.2a", "1.10") == 0 {
		t.Error("compareVersions")
	}
}

// TestLabFaultsNameMachines: faults of a machine the lab lacks are
// refused, not ignored.
func TestLabFaultsNameMachines(t *testing.T) {
	d, _ := gpuDesign(t)
	f := &maas.Faults{Machines: map[string]maas.MachineFaults{"no-such-node": {MissingGPUs: 1}}}
	if _, err := Start(t.Context(), Config{Design: d, TimeScale: 0.0005, Faults: f}); err == nil || !strings.Contains(err.Error(), "no-such-node") {
		t.Errorf("Start with faults of an unknown machine: %v", err)
	}
}

// TestLabHardwareThroughMAAS: a lab machine built from the GPU node, with
// faults, enlists and commissions; MAAS's machine read and op=details
// then report its hardware, faults included.
func TestLabHardwareThroughMAAS(t *testing.T) {
	d, name := gpuDesign(t)
	f := &maas.Faults{Machines: map[string]maas.MachineFaults{name: {MissingGPUs: 2, SwapCables: []string{"data0", "data1"},
		Firmware: &maas.FirmwareFault{BIOS: "1.0"}}}}
	l, err := Start(t.Context(), Config{Design: d, TimeScale: 0.0005, Seed: 3, Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	info := l.Info()
	m := l.Machine(name)
	c, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: info.MAASURL, APIKey: info.APIKey})
	if err != nil {
		t.Fatal(err)
	}
	m.SetBootDevice("pxe", false, true)
	m.PowerOn()
	var sysID string
	waitFor(t, "enlistment", func() bool {
		ms, err := c.Machines(gomaasapi.MachinesArgs{MACAddresses: []string{m.Hardware.NICs[0].MAC}})
		if err == nil && len(ms) == 1 {
			sysID = ms[0].SystemID()
			return true
		}
		return false
	})
	get := func(op string) []byte {
		t.Helper()
		creds, _ := maas.ParseAPIKey(info.APIKey)
		u := info.MAASURL + "/api/2.0/machines/" + sysID + "/"
		if op != "" {
			u += "?op=" + op
		}
		req, _ := http.NewRequest("GET", u, nil)
		creds.Sign(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
		}
		return b
	}
	if code, body := post(t, info, "/machines/"+sysID+"/", "commission", nil); code != 200 {
		t.Fatalf("commission: %d %s", code, body)
	}
	var read map[string]any
	waitFor(t, "Ready", func() bool {
		_ = json.Unmarshal(get(""), &read)
		return read["status_name"] == "Ready"
	})
	hi := read["hardware_info"].(map[string]any)
	if hi["system_product"] != d.Nodes[name].Spec.Hardware.Model || hi["mainboard_firmware_version"] != "1.0" ||
		read["cpu_count"].(float64) != 128 || read["memory"].(float64) != 1536*1024 {
		t.Errorf("machine read: hardware_info %v cpu_count %v memory %v", hi, read["cpu_count"], read["memory"])
	}
	var doc struct {
		LSHW []byte `bson:"lshw"`
		LLDP []byte `bson:"lldp"`
	}
	if err := bson.Unmarshal(get("details"), &doc); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(doc.LSHW), `class="display"`); n != 6 {
		t.Errorf("lshw has %d GPUs, want 8-2", n)
	}
	if strings.Contains(string(doc.LSHW), "0000:db:00.0") || !strings.Contains(string(doc.LSHW), "<businfo>pci@0000:18:00.0</businfo>") {
		t.Error("the wrong GPUs went missing")
	}
	// data0 now hears data1's switch port and the other way round.
	cab := d.Nodes[name].Spec.Cabling
	for alias, other := range map[string]string{"data0": "data1", "data1": "data0"} {
		var nicName string
		for _, nic := range m.Hardware.NICs {
			if nic.Alias == alias {
				nicName = nic.Name
			}
		}
		var ld struct {
			Interfaces []struct {
				Name    string `xml:"name,attr"`
				Chassis struct {
					Name string `xml:"name"`
				} `xml:"chassis"`
				Port struct {
					ID string `xml:"id"`
				} `xml:"port"`
			} `xml:"interface"`
		}
		if err := xml.Unmarshal(doc.LLDP, &ld); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, in := range ld.Interfaces {
			if in.Name == nicName {
				found = in.Chassis.Name == cab[other].Switch && in.Port.ID == cab[other].Port
			}
		}
		if !found {
			t.Errorf("lldp of %s (%s) does not name %+v:\n%s", alias, nicName, cab[other], doc.LLDP)
		}
	}
}
