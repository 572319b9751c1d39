package maas

import (
	"maps"
	"testing"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/slipway-dev/slipway/drivers"
)

// TestReadCacheDropsAgedOutAtOnce: an entry older than its TTL is gone
// after the next put, however few puts there were: the cache holds what
// was read within its TTLs, not every machine (or machine's node devices)
// ever read. Before, machines were swept only after 1,024 puts, and node
// devices never.
func TestReadCacheDropsAgedOutAtOnce(t *testing.T) {
	c := newReadCache(20 * time.Millisecond)
	c.deviceTTL = 20 * time.Millisecond
	c.putMachines(c.begin(), []mMachine{{mMachineState: mMachineState{SystemID: "a"}}})
	c.putDevices(c.begin(), "a", []nodeDevice{{PCIAddress: "0000:01:00.0"}})
	time.Sleep(50 * time.Millisecond)
	c.putMachines(c.begin(), []mMachine{{mMachineState: mMachineState{SystemID: "b"}}})
	c.putDevices(c.begin(), "b", []nodeDevice{{PCIAddress: "0000:02:00.0"}})
	if _, ok := c.machines["a"]; ok || len(c.machines) != 1 {
		t.Errorf("machines held: %d (a aged out: want only b)", len(c.machines))
	}
	if _, ok := c.devices["a"]; ok || len(c.devices) != 1 {
		t.Errorf("node devices held: %d (a's aged out: want only b's)", len(c.devices))
	}
	// A machine put again stays for its TTL from its last put.
	c = newReadCache(time.Hour)
	for range 3 {
		c.putMachines(c.begin(), []mMachine{{mMachineState: mMachineState{SystemID: "a"}}})
	}
	if _, ok := c.machine("a", 0); !ok || len(c.aged.keys)-c.aged.head != 3 {
		t.Errorf("a machine put three times is not answered (%v) or not queued thrice (%d)", ok, len(c.aged.keys)-c.aged.head)
	}
}

// TestReadCacheDevicesCompact: the node devices kept are what resolving
// aliases reads of them (PCI address; interface ID, name, MAC; disk ID,
// name), not MAAS's whole objects; the caller's devices are not changed,
// and aliases resolve from the kept ones as from the read ones.
func TestReadCacheDevicesCompact(t *testing.T) {
	const answer = `[{"pci_address":"0000:3B:00.0","physical_interface":{"id":7,"name":"enp59s0f0","type":"physical","mac_address":"0C:42:A1:00:00:01",
		"params":{"mtu":9000},"vlan":{"id":5001,"vid":0,"fabric":"fabric-0"},"links":[{"id":1,"mode":"auto","subnet":{"id":3,"cidr":"10.0.0.0/24"}}]},"physical_blockdevice":null},
		{"pci_address":"0000:5e:00.0","physical_interface":null,"physical_blockdevice":{"id":9,"name":"nvme0n1","size":1000,"serial":"S1","partitions":[{"id":1,"size":10}]}},
		{"pci_address":"0000:af:00.0"}]`
	var nds []nodeDevice
	if err := segjson.Unmarshal([]byte(answer), &nds); err != nil {
		t.Fatal(err)
	}
	c := newReadCache(time.Hour)
	c.putDevices(c.begin(), "m", nds)
	kept, ok := c.nodeDevices("m", true)
	if !ok || len(kept) != 3 {
		t.Fatalf("kept %d devices (%v), want 3", len(kept), ok)
	}
	if i := kept[0].Interface; i == nil || i.ID != 7 || i.Name != "enp59s0f0" || i.MAC != "0C:42:A1:00:00:01" || i.VLAN != nil || i.Links != nil || i.Params.raw != nil {
		t.Errorf("interface kept: %+v", kept[0].Interface)
	}
	if d := kept[1].Disk; d == nil || d.ID != 9 || d.Name != "nvme0n1" || d.Partitions != nil || d.Serial != nil {
		t.Errorf("disk kept: %+v", kept[1].Disk)
	}
	if nds[0].Interface.VLAN == nil || nds[1].Disk.Partitions == nil {
		t.Error("the caller's devices were changed")
	}
	for _, disks := range []bool{false, true} {
		devs := []drivers.Device{{Alias: "nic0", Bus: "pci", Address: "0000:3b:00.0"}, {Alias: "os0", Bus: "pci", Address: "0000:5E:00.0"}}
		a, b := map[string]resolved{}, map[string]resolved{}
		la, lb := byNodeDevices(devs, nds, disks, a), byNodeDevices(devs, kept, disks, b)
		if !maps.Equal(a, b) || len(la) != len(lb) || len(a) != 1 {
			t.Errorf("disks %v: resolved %v from the read, %v from the kept", disks, a, b)
		}
	}
}

// TestParamsKeptRaw: an interface's params are kept as their JSON and
// read as the map they were (a bond's options compared); none when MAAS
// sends "", null or {}.
func TestParamsKeptRaw(t *testing.T) {
	var ifs []mInterface
	in := `[{"id":1,"params":{"bond_mode":"802.3ad","bond_miimon":100}},{"id":2,"params":""},{"id":3,"params":{}},{"id":4,"params":null},{"id":5}]`
	if err := segjson.Unmarshal([]byte(in), &ifs); err != nil {
		t.Fatal(err)
	}
	if m := ifs[0].Params.Map(); m["bond_mode"] != "802.3ad" || m["bond_miimon"] != float64(100) {
		t.Errorf("bond params: %v", m)
	}
	if !bondMatches(&ifs[0], map[string]string{"bond_mode": "802.3ad", "bond_miimon": "100"}) || bondMatches(&ifs[0], map[string]string{"bond_mode": "active-backup"}) {
		t.Error("bondMatches does not compare the kept params")
	}
	for _, i := range ifs[1:] {
		if i.Params.raw != nil || i.Params.Map() != nil {
			t.Errorf("interface %d: params %q kept", i.ID, i.Params.raw)
		}
	}
	out, err := segjson.Marshal(ifs[0].Params)
	if err != nil || string(out) != `{"bond_mode":"802.3ad","bond_miimon":100}` {
		t.Errorf("params written back as %s (%v)", out, err)
	}
	if m := paramsOf(map[string]any{"bond_mode": "balance-rr"}).Map(); m["bond_mode"] != "balance-rr" {
		t.Errorf("params set by the planner: %v", m)
	}
}

// FuzzInterfaceParams: any answer decodes without panicking, and params
// kept read back as what they decode to.
func FuzzInterfaceParams(f *testing.F) {
	for _, s := range []string{`{"params":{"a":1}}`, `{"params":""}`, `{"params":{}}`, `{"params":[1]}`, `{"params":{"a":{"b":[null,true]}}}`, `{"params":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var i mInterface
		if segjson.Unmarshal(b, &i) != nil {
			return
		}
		m := i.Params.Map()
		if i.Params.raw == nil && m != nil {
			t.Fatalf("params without JSON read as %v", m)
		}
		if _, err := segjson.Marshal(i.Params); err != nil {
			t.Fatalf("params %q are not written back: %v", i.Params.raw, err)
		}
	})
}
