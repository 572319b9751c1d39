package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

func testInventory(serial string, gpus int, fw string) drivers.Inventory {
	inv := drivers.Inventory{MachineID: "m" + serial, System: drivers.System{Vendor: "Dell Inc.", Product: "PowerEdge R650", Serial: "SN" + serial},
		Firmware: drivers.Firmware{BIOSVendor: "Dell Inc.", BIOSVersion: "1.13.2", BIOSDate: "05/10/2024"},
		CPU:      drivers.CPU{Model: "Intel(R) Xeon(R) Gold 6430", Sockets: 2, Cores: 64, Threads: 128}, MemoryMiB: 512 << 10,
		NICs: []drivers.NIC{{Alias: "nic0", Name: "ens3f0", MAC: "0c:c4:7a:00:00:" + serial, PCIAddress: "0000:3b:00.0", Driver: "ice", Firmware: fw,
			SpeedMbps: 25000, LinkUp: true, Neighbor: &drivers.Neighbor{Switch: "leaf-r01", Port: "Ethernet" + serial}}},
		Disks: []drivers.Disk{{Alias: "data", Name: "nvme0n1", Model: "Dell Ent NVMe CM6", SizeBytes: 3840755982336, BusAddress: "0000:5e:00.0", Serial: "D" + serial}}}
	for i := 0; i < gpus; i++ {
		inv.GPUs = append(inv.GPUs, drivers.PCIDevice{Vendor: "NVIDIA Corporation", Model: "GA100 [A100 PCIe 80GB]", VendorID: "10de", ProductID: "20b5",
			Address: []string{"0000:17:00.0", "0000:ca:00.0"}[i%2], NUMANode: i % 2})
	}
	return inv
}

// TestInventoryCommand: inventory NODE prints the recorded inventory as a
// table, JSON or YAML; a node not commissioned is refused by name;
// --diff names the odd one out of a hardware profile.
func TestInventoryCommand(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state.db")
	if code, _, errs := cli(t, "apply", "--state", state, exampleSite); code != 0 {
		t.Fatalf("apply: %s", errs)
	}
	st, err := bolt.Open(state, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := currentDesign(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	// The nodes of the largest hardware profile: the first has a GPU
	// fewer than the others.
	groups := map[string][]string{}
	hw := ""
	for _, n := range d.NodeNames() {
		p := d.Nodes[n].Spec.HardwareProfile
		groups[p] = append(groups[p], n)
		if len(groups[p]) > len(groups[hw]) || hw == "" {
			hw = p
		}
	}
	nodes := groups[hw]
	if len(nodes) < 3 {
		t.Fatalf("profile %s has nodes %v: want 3 or more", hw, nodes)
	}
	odd, shown, other := nodes[0], nodes[1], ""
	for _, n := range d.NodeNames() {
		if d.Nodes[n].Spec.HardwareProfile != hw {
			other = n
		}
	}
	for i, n := range nodes {
		gpus := 2
		if n == odd {
			gpus = 1
		}
		op, err := orchestrator.InventoryOp(n, testInventory(string(rune('a'+i))+"1", gpus, "4.40"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Write(t.Context(), op); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	code, out, errs := cli(t, "inventory", "--state", state, shown)
	if code != 0 {
		t.Fatalf("inventory: %d %s", code, errs)
	}
	t.Logf("inventory %s:\n%s", shown, out)
	for _, want := range []string{"node " + shown, "hardware profile " + hw, "Dell Inc. PowerEdge R650", "BIOS Dell Inc. 1.13.2", "2 x Intel(R) Xeon(R) Gold 6430, 64 cores, 128 threads",
		"512GiB", "GPUs (2)", "0000:ca:00.0", "GA100 [A100 PCIe 80GB]", "10de:20b5", "ice", "25G", "leaf-r01 Ethernet", "3.84 TB", "0000:5e:00.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = cli(t, "inventory", "--state", state, shown, "-o", "json")
	var ni api.NodeInventory
	if code != 0 || json.Unmarshal([]byte(out), &ni) != nil || len(ni.Inventory.GPUs) != 2 || ni.HardwareProfile != hw {
		t.Errorf("-o json: %d %s", code, out)
	}
	if code, out, _ = cli(t, "inventory", "--state", state, shown, "-o", "yaml"); code != 0 || !strings.Contains(out, "hardware_profile: "+hw) || !strings.Contains(out, "numa_node: 1") {
		t.Errorf("-o yaml: %d %s", code, out)
	}
	if code, _, errs = cli(t, "inventory", "--state", state, other); code == 0 || !strings.Contains(errs, other) || !strings.Contains(errs, "not commissioned yet") {
		t.Errorf("a node not commissioned: %d %s", code, errs)
	}

	code, out, errs = cli(t, "inventory", "--state", state, "--diff", "--profile", hw)
	if code != 0 {
		t.Fatalf("--diff: %d %s", code, errs)
	}
	t.Logf("inventory --diff:\n%s", out)
	if !strings.Contains(out, odd) || !strings.Contains(out, "gpus.count") || strings.Contains(out, shown+" ") || strings.Contains(out, "serial") {
		t.Errorf("--diff should name %s's GPU count only:\n%s", odd, out)
	}
	var rep inventoryDiffReport
	if code, out, _ = cli(t, "inventory", "--state", state, "--diff", "-o", "json"); code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("--diff -o json: %d %s", code, out)
	}
	oddOnes := 0
	for _, p := range rep.Profiles {
		if p.Profile != hw && p.Nodes > 0 {
			t.Errorf("profile %s has %d inventories, want none", p.Profile, p.Nodes)
		}
		oddOnes += len(p.OddOnesOut)
	}
	if oddOnes != 2 { // gpus.count and gpus.models of the odd node
		t.Errorf("%d odd ones out, want 2: %s", oddOnes, out)
	}
	if code, _, _ = cli(t, "inventory", "--state", state, "--diff", odd); code == 0 {
		t.Errorf("--diff with a node: accepted")
	}
	if code, _, errs = cli(t, "inventory", "--state", state, "--diff", "--profile", "nosuch"); code == 0 || !strings.Contains(errs, "nosuch") {
		t.Errorf("--profile nosuch: %d %s", code, errs)
	}
}

// TestInventoryAfterDemo: the demo (lab MAAS, real driver) prints a GPU
// node's inventory, and inventory reads the state it leaves: the GPU
// node's GPUs, NIC drivers and LLDP neighbours, and --diff of the site.
func TestInventoryAfterDemo(t *testing.T) {
	t.Parallel()
	state, code, out, errs := exampleDemo(t) // shared with TestDemo
	if code != 0 {
		t.Fatalf("demo: %d %s\n%s", code, errs, out)
	}
	i := strings.Index(out, "== Inventory of a GPU node")
	if i < 0 || !strings.Contains(out[i:], "GPUs (") || !strings.Contains(out[i:], "NEIGHBOR") {
		t.Fatalf("the demo prints no GPU node inventory:\n%s", out)
	}
	node := strings.TrimSuffix(strings.Fields(out[i:])[8], ";")
	code, out, errs = cli(t, "inventory", "--state", state, node, "-o", "json")
	var ni api.NodeInventory
	if code != 0 || json.Unmarshal([]byte(out), &ni) != nil {
		t.Fatalf("inventory %s: %d %s %s", node, code, errs, out)
	}
	inv := ni.Inventory
	if len(inv.GPUs) == 0 || inv.CPU.Threads == 0 || inv.MemoryMiB == 0 || len(inv.Disks) == 0 || inv.System.Vendor == "" {
		t.Errorf("inventory of %s lacks hardware facts: %+v", node, inv)
	}
	neighbours := 0
	for _, n := range inv.NICs {
		if n.Driver == "" || n.PCIAddress == "" || n.MAC == "" {
			t.Errorf("NIC %+v: no driver, PCI address or MAC", n)
		}
		if n.Neighbor != nil {
			neighbours++
		}
	}
	if neighbours == 0 {
		t.Errorf("no NIC of %s has an LLDP neighbour: %+v", node, inv.NICs)
	}
	if code, out, errs = cli(t, "inventory", "--state", state, "--diff"); code != 0 || !strings.Contains(out, "hardware profile "+ni.HardwareProfile) {
		t.Errorf("inventory --diff: %d %s %s", code, errs, out)
	}
	t.Logf("inventory --diff of the demo site:\n%s", out)
}

// TestInventoryRemote: inventory and --diff through the control API with
// a viewer token.
func TestInventoryRemote(t *testing.T) {
	t.Parallel()
	srv := remoteServer(t)
	ctx := t.Context()
	d, err := currentDesign(ctx, srv.Store)
	if err != nil {
		t.Fatal(err)
	}
	hw := d.Nodes[srv.Node].Spec.HardwareProfile
	var same []string
	for _, n := range d.NodeNames() {
		if d.Nodes[n].Spec.HardwareProfile == hw {
			same = append(same, n)
		}
	}
	// The example site is the repository's own data: a design without three
	// nodes of one profile is a change to catch, not a reason to skip.
	if len(same) < 3 {
		t.Fatalf("hardware profile %s of %s has %d nodes in examples/site-yaml; the test needs 3 (keep three nodes of that profile there)", hw, srv.Node, len(same))
	}
	for i, n := range same[:3] {
		fw := "4.40"
		if i == 2 {
			fw = "4.10"
		}
		op, err := orchestrator.InventoryOp(n, testInventory(string(rune('a'+i))+"2", 0, fw))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Store.Write(ctx, op); err != nil {
			t.Fatal(err)
		}
	}
	remote := []string{"--server", srv.URL, "--token", srv.Token[api.RoleViewer]}
	code, out, errs := cli(t, append(remote, "inventory", same[0])...)
	if code != 0 || !strings.Contains(out, "node "+same[0]) || !strings.Contains(out, "hardware profile "+hw) {
		t.Errorf("remote inventory: %d %s %s", code, errs, out)
	}
	code, out, errs = cli(t, append(remote, "inventory", "--diff", "--profile", hw, "-o", "json")...)
	var rep inventoryDiffReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Profiles) != 1 {
		t.Fatalf("remote --diff: %d %s %s", code, errs, out)
	}
	p := rep.Profiles[0]
	if p.Nodes != 3 || len(p.NotInventoried) != len(same)-3 || len(p.OddOnesOut) != 1 || p.OddOnesOut[0].Node != same[2] || p.OddOnesOut[0].Field != "nic[nic0].firmware" {
		t.Errorf("remote --diff: %+v", p)
	}
	if code, _, errs = cli(t, append(remote, "inventory", same[len(same)-1])...); len(same) > 3 && (code == 0 || !strings.Contains(errs, "not commissioned yet")) {
		t.Errorf("remote inventory of a node not commissioned: %d %s", code, errs)
	}
}
