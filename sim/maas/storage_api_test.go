package maas

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/juju/gomaasapi/v2"
)

// Sizes of the test machine's disks.
const (
	stSDA  = int64(480e9)
	stSDB  = int64(100e9)
	stNVMe = int64(960e9)
	stMiB  = int64(1) << 20
)

// storageSim is a simulator with one commissioned, Ready machine: sda (the
// boot disk), nvme0n1 (an NVMe disk at a PCI address) and sdb.
type storageSim struct {
	t   *testing.T
	s   *Server
	hs  *httptest.Server
	m   *machine
	sid string
	ids map[string]int // block device ids by name
}

func newStorageSim(t *testing.T) *storageSim {
	t.Helper()
	s := New(Options{APIKey: Credentials{"ck", "tk", "ts"}, TimeScale: 0.0001})
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	s.mu.Lock()
	m := s.newMachine("st1", "", []string{"52:54:00:00:10:01"})
	m.hw = &Hardware{Arch: "amd64/generic", CPUs: 8, MemoryMiB: 16384, Vendor: "Lab", Product: "Simulated",
		NICs: []NIC{{MAC: "52:54:00:00:10:01", PCI: "0000:3b:00.0", Name: "ens3f0", Network: "lab",
			Vendor: "Intel Corporation", Product: "Ethernet Controller E810-XXV"}},
		Disks: []Disk{
			{Name: "sda", Bus: "scsi", Addr: "0:0:0:0", Size: stSDA, Model: "Lab SSD", Serial: "S0"},
			{Name: "nvme0n1", Bus: "nvme", Addr: "0000:5e:00.0", Size: stNVMe, Model: "Lab NVMe", Serial: "N0"},
			{Name: "sdb", Bus: "scsi", Addr: "1:0:0:0", Size: stSDB, Model: "Lab SSD", Serial: "S1"},
		}}
	s.discoverDisks(m)
	m.commissioned = true
	m.Status = StatusReady
	ids := map[string]int{}
	for _, b := range m.BlockDevices {
		ids[b.Name] = b.ID
	}
	s.mu.Unlock()
	return &storageSim{t: t, s: s, hs: hs, m: m, sid: m.SystemID, ids: ids}
}

func (st *storageSim) setStatus(status int) {
	st.s.mu.Lock()
	st.m.Status = status
	st.s.mu.Unlock()
}

// call makes a signed request; form goes in the query for GET and DELETE,
// in a urlencoded body otherwise.
func (st *storageSim) call(method, path, op string, form url.Values) (int, string) {
	st.t.Helper()
	u := st.hs.URL + APIPrefix + path
	q := url.Values{}
	if op != "" {
		q.Set("op", op)
	}
	var body io.Reader
	if method == http.MethodGet || method == http.MethodDelete {
		for k, v := range form {
			q[k] = v
		}
	} else if form != nil {
		body = strings.NewReader(form.Encode())
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		st.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", `OAuth oauth_version="1.0", oauth_signature_method="PLAINTEXT", oauth_consumer_key="ck", oauth_token="tk", oauth_signature="&ts", oauth_nonce="x", oauth_timestamp="1"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		st.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// ok makes a request that must answer 200 with a JSON object.
func (st *storageSim) ok(method, path, op string, form url.Values) map[string]any {
	st.t.Helper()
	code, body := st.call(method, path, op, form)
	if code != http.StatusOK {
		st.t.Fatalf("%s %s op=%s %v: %d %s", method, path, op, form, code, body)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		st.t.Fatalf("%s %s: %v in %s", method, path, err, body)
	}
	return out
}

func (st *storageSim) list(path string, form url.Values) []map[string]any {
	st.t.Helper()
	code, body := st.call("GET", path, "", form)
	if code != http.StatusOK {
		st.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	var out []map[string]any
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		st.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	return out
}

// fails makes a request that must answer status with exactly want (a
// plain message, or the JSON of field errors).
func (st *storageSim) fails(status int, want, method, path, op string, form url.Values) {
	st.t.Helper()
	code, body := st.call(method, path, op, form)
	if code != status || strings.TrimSpace(body) != want {
		st.t.Fatalf("%s %s op=%s %v:\n got %d %s\nwant %d %s", method, path, op, form, code, body, status, want)
	}
}

func fieldErr(field, msg string) string {
	b, _ := json.Marshal(map[string][]string{field: {msg}})
	return string(b)
}

func (st *storageSim) bd(name string) string {
	return fmt.Sprintf("/nodes/%s/blockdevices/%d/", st.sid, st.ids[name])
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func align4(n int64) int64 { return n / (4 * stMiB) * (4 * stMiB) }

// TestStorageManualLVM builds an LVM layout by hand on sdb: two partitions,
// a volume group on the second, a logical volume formatted and mounted,
// the first partition formatted and mounted; then takes it apart.
func TestStorageManualLVM(t *testing.T) {
	st := newStorageSim(t)
	sdb := st.bd("sdb")

	p1 := st.ok("POST", sdb+"partitions/", "", url.Values{"size": {"10G"}})
	if num(p1["size"]) != align4(10e9) || p1["type"] != "partition" || p1["path"] != "/dev/disk/by-dname/sdb-part1" ||
		p1["used_for"] != "Unused" || p1["filesystem"] != nil || p1["uuid"] == "" {
		t.Fatalf("partition 1: %v", p1)
	}
	wantURI := fmt.Sprintf("%s/nodes/%s/blockdevices/%d/partition/%d", APIPrefix, st.sid, st.ids["sdb"], num(p1["id"]))
	if p1["resource_uri"] != wantURI {
		t.Fatalf("resource_uri %v, want %s", p1["resource_uri"], wantURI)
	}
	// No size: the rest of the disk, less the partition table's 5 MiB.
	p2 := st.ok("POST", sdb+"partitions/", "", url.Values{"bootable": {"false"}})
	wantP2 := align4(stSDB - 5*stMiB - align4(10e9))
	if num(p2["size"]) != wantP2 || p2["path"] != "/dev/disk/by-dname/sdb-part2" || p2["bootable"] != false {
		t.Fatalf("partition 2: %v (want size %d)", p2, wantP2)
	}
	dev := st.ok("GET", sdb, "", nil)
	if dev["partition_table_type"] != "GPT" || dev["used_for"] != "GPT partitioned with 2 partitions" ||
		num(dev["available_size"]) != 0 || num(dev["used_size"]) != 5*stMiB+align4(10e9)+wantP2 {
		t.Fatalf("sdb: %v", dev)
	}
	st.fails(400, fieldErr("size", "Partition cannot be saved; not enough free space on the block device."),
		"POST", sdb+"partitions/", "", url.Values{"size": {"1G"}})

	vg := st.ok("POST", "/nodes/"+st.sid+"/volume-groups/", "", url.Values{
		"name": {"vgdata"}, "partitions": {fmt.Sprint(num(p2["id"]))}})
	wantVG := (wantP2/(4*stMiB) - 1) * 4 * stMiB // one extent of metadata
	if vg["name"] != "vgdata" || num(vg["size"]) != wantVG || num(vg["available_size"]) != wantVG ||
		num(vg["used_size"]) != 0 || vg["uuid"] == "" {
		t.Fatalf("volume group: %v (want size %d)", vg, wantVG)
	}
	vgID := num(vg["id"])
	vgURI := fmt.Sprintf("/nodes/%s/volume-group/%d/", st.sid, vgID)
	if vg["resource_uri"] != APIPrefix+vgURI {
		t.Fatalf("vg resource_uri %v", vg["resource_uri"])
	}
	pv := vg["devices"].([]any)[0].(map[string]any)
	fs := pv["filesystem"].(map[string]any)
	if num(pv["id"]) != num(p2["id"]) || pv["used_for"] != "LVM volume for vgdata" || fs["fstype"] != "lvm-pv" ||
		fs["label"] != nil || fs["mount_point"] != nil {
		t.Fatalf("physical volume: %v", pv)
	}

	lv := st.ok("POST", vgURI, "create_logical_volume", url.Values{"name": {"lvdata"}, "size": {"20G"}})
	if lv["name"] != "vgdata-lvdata" || lv["type"] != "virtual" || num(lv["size"]) != align4(20e9) ||
		lv["path"] != "/dev/disk/by-dname/vgdata-lvdata" || num(lv["block_size"]) != 4096 || lv["uuid"] == nil ||
		lv["model"] != nil || lv["serial"] != nil || lv["used_for"] != "Unused" {
		t.Fatalf("logical volume: %v", lv)
	}
	lvPath := fmt.Sprintf("/nodes/%s/blockdevices/%d/", st.sid, num(lv["id"]))
	lv = st.ok("POST", lvPath, "format", url.Values{"fstype": {"ext4"}, "label": {"data"}})
	if f := lv["filesystem"].(map[string]any); f["fstype"] != "ext4" || f["label"] != "data" || lv["used_for"] != "Unmounted ext4 formatted filesystem" {
		t.Fatalf("formatted lv: %v", lv)
	}
	lv = st.ok("POST", lvPath, "mount", url.Values{"mount_point": {"/srv/data"}, "mount_options": {"noatime"}})
	if f := lv["filesystem"].(map[string]any); f["mount_point"] != "/srv/data" || f["mount_options"] != "noatime" ||
		lv["used_for"] != "ext4 formatted filesystem mounted at /srv/data" || num(lv["available_size"]) != 0 {
		t.Fatalf("mounted lv: %v", lv)
	}
	part1 := fmt.Sprintf("/nodes/%s/blockdevices/%d/partition/%d", st.sid, st.ids["sdb"], num(p1["id"]))
	st.ok("POST", part1, "format", url.Values{"fstype": {"xfs"}})
	p1 = st.ok("POST", part1, "mount", url.Values{"mount_point": {"/var/lib/data"}})
	if p1["used_for"] != "xfs formatted filesystem mounted at /var/lib/data" {
		t.Fatalf("partition 1 mounted: %v", p1)
	}

	// The group's view, under both spellings of its URI.
	for _, path := range []string{vgURI, fmt.Sprintf("/nodes/%s/volume-groups/%d/", st.sid, vgID)} {
		vg = st.ok("GET", path, "", nil)
		lvs := vg["logical_volumes"].([]any)
		if len(lvs) != 1 || num(vg["used_size"]) != align4(20e9) || num(vg["available_size"]) != wantVG-align4(20e9) ||
			vg["human_used_size"] != "20.0 GB" {
			t.Fatalf("volume group %s: %v", path, vg)
		}
	}
	if vgs := st.list("/nodes/"+st.sid+"/volume-groups/", nil); len(vgs) != 1 {
		t.Fatalf("volume groups: %v", vgs)
	}
	// The partition by id with and without the trailing slash, plural or
	// singular, and by name.
	for _, path := range []string{part1, part1 + "/", strings.Replace(part1, "/partition/", "/partitions/", 1),
		fmt.Sprintf("/nodes/%s/blockdevices/sdb/partition/sdb-part1", st.sid)} {
		if p := st.ok("GET", path, "", nil); num(p["id"]) != num(p1["id"]) {
			t.Fatalf("GET %s: %v", path, p)
		}
	}
	if parts := st.list(sdb+"partitions/", nil); len(parts) != 2 {
		t.Fatalf("partitions: %v", parts)
	}

	// The machine as gomaasapi sees it.
	gm := st.gomaasMachine()
	var sawLV bool
	for _, b := range gm.BlockDevices() {
		if b.Name() == "vgdata-lvdata" {
			sawLV = true
			if b.UsedFor() != "ext4 formatted filesystem mounted at /srv/data" || b.FileSystem().MountPoint() != "/srv/data" {
				t.Fatalf("gomaasapi lv: %+v", b)
			}
		}
	}
	if !sawLV || len(gm.PhysicalBlockDevices()) != 3 || len(gm.BlockDevices()) != 4 {
		t.Fatalf("gomaasapi block devices: %d physical, %d in all", len(gm.PhysicalBlockDevices()), len(gm.BlockDevices()))
	}
	if p := gm.Partition(int(num(p2["id"]))); p == nil || p.FileSystem() == nil || p.FileSystem().Type() != "lvm-pv" || p.UsedFor() != "LVM volume for vgdata" {
		t.Fatalf("gomaasapi partition: %+v", p)
	}
	mj := st.ok("GET", "/machines/"+st.sid+"/", "", nil)
	if v := mj["virtualblockdevice_set"].([]any); len(v) != 1 {
		t.Fatalf("virtualblockdevice_set: %v", v)
	}
	if v := mj["volume_groups"].([]any); len(v) != 1 || v[0].(map[string]any)["__incomplete__"] != true {
		t.Fatalf("volume_groups: %v", v)
	}

	// What a physical volume refuses.
	part2 := fmt.Sprintf("/nodes/%s/blockdevices/%d/partition/%d", st.sid, st.ids["sdb"], num(p2["id"]))
	st.fails(400, "Cannot delete partition because its part of a volume group.", "DELETE", part2, "", nil)
	st.fails(400, "Filesystem is part of a volume group, and cannot be unformatted. Remove partition from volume group before unformatting the partition.",
		"POST", part2, "unformat", nil)
	st.fails(400, fieldErr("__all__", "Filesystem is part of a filesystem group, and cannot be mounted."),
		"POST", part2, "mount", url.Values{"mount_point": {"/x"}})
	st.fails(400, "Cannot format a partition that has a filesystem type of lvm-pv.", "POST", part2, "format", url.Values{"fstype": {"ext4"}})
	st.fails(400, "Cannot delete block device because its part of a volume group.", "DELETE", sdb, "", nil)

	// Take it apart.
	st.fails(400, "No provided id!", "POST", vgURI, "delete_logical_volume", nil)
	if code, body := st.call("POST", vgURI, "delete_logical_volume", url.Values{"id": {fmt.Sprint(num(lv["id"]))}}); code != 204 {
		t.Fatalf("delete_logical_volume: %d %s", code, body)
	}
	if code, _ := st.call("POST", vgURI, "delete_logical_volume", url.Values{"id": {"99999"}}); code != 204 {
		t.Fatalf("delete_logical_volume of a missing volume: %d", code)
	}
	if code, body := st.call("DELETE", vgURI, "", nil); code != 204 {
		t.Fatalf("delete volume group: %d %s", code, body)
	}
	st.fails(404, "No VolumeGroup matches the given query.", "GET", vgURI, "", nil)
	if p := st.ok("GET", part2, "", nil); p["filesystem"] != nil || p["used_for"] != "Unused" {
		t.Fatalf("freed partition: %v", p)
	}
	if code, body := st.call("DELETE", part2, "", nil); code != 204 {
		t.Fatalf("delete partition: %d %s", code, body)
	}
	st.ok("POST", part1, "unmount", nil)
	p1 = st.ok("POST", part1, "unformat", nil)
	if p1["filesystem"] != nil {
		t.Fatalf("unformatted: %v", p1)
	}
	dev = st.ok("GET", sdb, "", nil)
	if dev["used_for"] != "GPT partitioned with 1 partition" || len(dev["partitions"].([]any)) != 1 {
		t.Fatalf("sdb after: %v", dev)
	}
	// The stats count by path template, not by object.
	for _, r := range st.s.Stats().Snapshot().Requests {
		if strings.ContainsAny(r.Request, "0123456789") && !strings.Contains(r.Request, "2.0") {
			t.Errorf("stats key with an id: %s", r.Request)
		}
	}
}

// TestStorageManualWholeDisks: a volume group of whole disks, and the boot
// disk given whole, which MAAS partitions first.
func TestStorageManualWholeDisks(t *testing.T) {
	st := newStorageSim(t)
	vg := st.ok("POST", "/nodes/"+st.sid+"/volume-groups/", "", url.Values{
		"name": {"vg0"}, "block_devices": {fmt.Sprint(st.ids["nvme0n1"]), "sdb", fmt.Sprint(st.ids["sda"])}})
	devs := vg["devices"].([]any)
	if len(devs) != 3 {
		t.Fatalf("devices: %v", devs)
	}
	sdaPart := align4(stSDA - 5*stMiB)
	want := ((stNVMe+stSDB+sdaPart)/(4*stMiB) - 3) * 4 * stMiB
	if num(vg["size"]) != want {
		t.Fatalf("size %d, want %d", num(vg["size"]), want)
	}
	// Whole disks first, then the boot disk's partition.
	if devs[0].(map[string]any)["name"] != "nvme0n1" || devs[2].(map[string]any)["type"] != "partition" {
		t.Fatalf("devices: %v", devs)
	}
	if b := st.ok("GET", st.bd("nvme0n1"), "", nil); b["used_for"] != "LVM volume for vg0" || num(b["used_size"]) != stNVMe {
		t.Fatalf("nvme0n1: %v", b)
	}
	if b := st.ok("GET", st.bd("sda"), "", nil); b["used_for"] != "GPT partitioned with 1 partition" {
		t.Fatalf("sda: %v", b)
	}
	lv := st.ok("POST", fmt.Sprintf("/nodes/%s/volume-group/%d/", st.sid, num(vg["id"])), "create_logical_volume", url.Values{"name": {"all"}})
	if num(lv["size"]) != want {
		t.Fatalf("lv without a size takes the whole group: %v", lv)
	}
	st.fails(400, fieldErr("__all__", "Volume group (vg0) cannot hold any more logical volumes, because it doesn't have enough free space."),
		"POST", fmt.Sprintf("/nodes/%s/volume-group/%d/", st.sid, num(vg["id"])), "create_logical_volume", url.Values{"name": {"more"}})
	st.gomaasMachine()
}

// TestStorageLayouts sets the flat and lvm layouts (and blank), checks what
// they build and that they replace what was there.
func TestStorageLayouts(t *testing.T) {
	st := newStorageSim(t)
	machine := "/machines/" + st.sid + "/"
	// Something to replace: a volume group on sdb.
	st.ok("POST", "/nodes/"+st.sid+"/volume-groups/", "", url.Values{"name": {"old"}, "block_devices": {"sdb"}})

	m := st.ok("POST", machine, "set_storage_layout", url.Values{"storage_layout": {"flat"}})
	if v := m["volume_groups"].([]any); len(v) != 0 {
		t.Fatalf("volume groups left: %v", v)
	}
	sda := st.ok("GET", st.bd("sda"), "", nil)
	parts := sda["partitions"].([]any)
	if len(parts) != 2 || sda["partition_table_type"] != "GPT" {
		t.Fatalf("flat sda: %v", sda)
	}
	efi, root := parts[0].(map[string]any), parts[1].(map[string]any)
	efiFS, rootFS := efi["filesystem"].(map[string]any), root["filesystem"].(map[string]any)
	if num(efi["size"]) != 512*stMiB || efi["bootable"] != true || efiFS["fstype"] != "fat32" || efiFS["label"] != "efi" ||
		efiFS["mount_point"] != "/boot/efi" || efi["used_for"] != "fat32 formatted filesystem mounted at /boot/efi" {
		t.Fatalf("efi: %v", efi)
	}
	wantRoot := align4(stSDA - 5*stMiB - 512*stMiB)
	if num(root["size"]) != wantRoot || rootFS["fstype"] != "ext4" || rootFS["label"] != "root" || rootFS["mount_point"] != "/" ||
		root["path"] != "/dev/disk/by-dname/sda-part2" {
		t.Fatalf("root: %v (want size %d)", root, wantRoot)
	}
	if b := st.ok("GET", st.bd("sdb"), "", nil); b["used_for"] != "Unused" || b["filesystem"] != nil {
		t.Fatalf("sdb not cleared: %v", b)
	}
	bd := m["boot_disk"].(map[string]any)
	if bd["name"] != "sda" || len(bd["partitions"].([]any)) != 2 {
		t.Fatalf("boot_disk: %v", bd)
	}

	// lvm with a /boot partition, named group and volume, and a sized LV.
	m = st.ok("POST", machine, "set_storage_layout", url.Values{"storage_layout": {"lvm"}, "boot_size": {"1G"},
		"vg_name": {"vgsys"}, "lv_name": {"root"}, "lv_size": {"100G"}})
	if vgs, _ := m["volume_groups"].([]any); len(vgs) != 1 {
		t.Fatalf("the machine set_storage_layout answers lists volume groups %v, want vgsys", m["volume_groups"])
	}
	sda = st.ok("GET", st.bd("sda"), "", nil)
	parts = sda["partitions"].([]any)
	if len(parts) != 3 {
		t.Fatalf("lvm sda: %v", sda)
	}
	boot, pv := parts[1].(map[string]any), parts[2].(map[string]any)
	if num(boot["size"]) != align4(1e9) || boot["filesystem"].(map[string]any)["mount_point"] != "/boot" ||
		pv["used_for"] != "LVM volume for vgsys" {
		t.Fatalf("boot %v pv %v", boot, pv)
	}
	vgs := st.list("/nodes/"+st.sid+"/volume-groups/", nil)
	if len(vgs) != 1 || vgs[0]["name"] != "vgsys" {
		t.Fatalf("volume groups: %v", vgs)
	}
	lvs := vgs[0]["logical_volumes"].([]any)
	lv := lvs[0].(map[string]any)
	if len(lvs) != 1 || lv["name"] != "vgsys-root" || num(lv["size"]) != align4(100e9) ||
		lv["used_for"] != "ext4 formatted filesystem mounted at /" {
		t.Fatalf("logical volumes: %v", lvs)
	}

	// The default lvm layout: vgroot/lvroot over the whole group.
	st.ok("POST", machine, "set_storage_layout", url.Values{"storage_layout": {"lvm"}})
	vgs = st.list("/nodes/"+st.sid+"/volume-groups/", nil)
	pvSize := align4(stSDA - 5*stMiB - 512*stMiB)
	wantVG := (pvSize/(4*stMiB) - 1) * 4 * stMiB
	if len(vgs) != 1 || vgs[0]["name"] != "vgroot" || num(vgs[0]["size"]) != wantVG || num(vgs[0]["available_size"]) != 0 {
		t.Fatalf("vgroot: %v", vgs)
	}
	lv = vgs[0]["logical_volumes"].([]any)[0].(map[string]any)
	if lv["name"] != "vgroot-lvroot" || num(lv["size"]) != wantVG {
		t.Fatalf("lvroot: %v", lv)
	}
	gm := st.gomaasMachine()
	if len(gm.BlockDevices()) != 4 {
		t.Fatalf("gomaasapi: %d block devices", len(gm.BlockDevices()))
	}

	// root_device: the root partition goes to sdb.
	st.ok("POST", machine, "set_storage_layout", url.Values{"storage_layout": {"flat"}, "root_device": {fmt.Sprint(st.ids["sdb"])}, "root_size": {"50G"}})
	if b := st.ok("GET", st.bd("sdb"), "", nil); len(b["partitions"].([]any)) != 1 ||
		num(b["partitions"].([]any)[0].(map[string]any)["size"]) != align4(50e9) {
		t.Fatalf("sdb root: %v", b)
	}
	if b := st.ok("GET", st.bd("sda"), "", nil); len(b["partitions"].([]any)) != 1 {
		t.Fatalf("sda with only the EFI partition: %v", b)
	}

	// blank clears everything.
	st.ok("POST", machine, "set_storage_layout", url.Values{"storage_layout": {"blank"}})
	for _, b := range st.list("/nodes/"+st.sid+"/blockdevices/", nil) {
		if b["used_for"] != "Unused" || b["partition_table_type"] != nil {
			t.Fatalf("blank: %v", b)
		}
	}
}

func TestStorageLayoutErrors(t *testing.T) {
	st := newStorageSim(t)
	machine := "/machines/" + st.sid + "/"
	st.fails(400, fieldErr("storage_layout", "This field is required."), "POST", machine, "set_storage_layout", nil)
	st.fails(400, fieldErr("storage_layout", "'zfs' is not a valid storage_layout.  It should be one of: 'bcache', 'blank', 'custom', 'flat', 'lvm', 'vmfs6', 'vmfs7'."),
		"POST", machine, "set_storage_layout", url.Values{"storage_layout": {"zfs"}})
	st.fails(400, fieldErr("boot_size", "Size is too small. Minimum size is 536870912."),
		"POST", machine, "set_storage_layout", url.Values{"storage_layout": {"flat"}, "boot_size": {"10M"}})
	st.fails(400, fieldErr("boot_size", "Enter a valid value."),
		"POST", machine, "set_storage_layout", url.Values{"storage_layout": {"flat"}, "boot_size": {"big"}})
	st.fails(400, fieldErr("lv_size", "Size is too small. Minimum size is 3221225472."),
		"POST", machine, "set_storage_layout", url.Values{"storage_layout": {"lvm"}, "lv_size": {"1G"}})
	st.fails(400, fieldErr("root_device", fmt.Sprintf("'999' is not a valid root_device.  It should be one of: '%d', '%d', '%d'.", st.ids["sda"], st.ids["nvme0n1"], st.ids["sdb"])),
		"POST", machine, "set_storage_layout", url.Values{"storage_layout": {"flat"}, "root_device": {"999"}})
	if code, body := st.call("POST", machine, "set_storage_layout", url.Values{"storage_layout": {"bcache"}}); code != 400 ||
		!strings.HasPrefix(body, "Failed to configure storage layout 'bcache'") {
		t.Fatalf("bcache: %d %s", code, body)
	}

	// A layout that fails half-way (the volume cannot be as large as its
	// partition: LVM keeps an extent) changes nothing.
	before := st.list("/nodes/"+st.sid+"/blockdevices/", nil)
	code, body := st.call("POST", machine, "set_storage_layout", url.Values{"storage_layout": {"lvm"}, "root_size": {"10G"}, "lv_size": {"10G"}})
	if code != 400 || !strings.Contains(body, "There is not enough free space") {
		t.Fatalf("lvm with lv_size = root_size: %d %s", code, body)
	}
	after := st.list("/nodes/"+st.sid+"/blockdevices/", nil)
	if b, a := fmt.Sprint(before), fmt.Sprint(after); a != b {
		t.Fatalf("storage changed by a failed layout:\n%s\n%s", b, a)
	}

	// Only on a Ready machine.
	for _, status := range []int{StatusAllocated, StatusDeployed, StatusNew} {
		st.setStatus(status)
		st.fails(409, "Cannot change the storage layout on a machine that is not Ready.",
			"POST", machine, "set_storage_layout", url.Values{"storage_layout": {"flat"}})
	}
	st.fails(404, "No Machine matches the given query.", "POST", "/machines/nosuch/", "set_storage_layout", url.Values{"storage_layout": {"flat"}})

	// A machine without disks.
	st.setStatus(StatusReady)
	st.s.mu.Lock()
	st.m.BlockDevices = nil
	st.s.mu.Unlock()
	st.fails(400, "Machine is missing a boot disk; no storage layout can be applied.",
		"POST", machine, "set_storage_layout", url.Values{"storage_layout": {"flat"}})
}

// TestStorageStateGuard: which changes MAAS allows in which state.
func TestStorageStateGuard(t *testing.T) {
	st := newStorageSim(t)
	sdb, nodes := st.bd("sdb"), "/nodes/"+st.sid+"/"
	p := st.ok("POST", sdb+"partitions/", "", url.Values{"size": {"8G"}})
	part := fmt.Sprintf("%spartition/%d", sdb, num(p["id"]))
	vg := st.ok("POST", nodes+"volume-groups/", "", url.Values{"name": {"vg"}, "block_devices": {"nvme0n1"}})
	vgURI := fmt.Sprintf("%svolume-group/%d/", nodes, num(vg["id"]))

	// Allocated: format, mount, unmount, unformat only.
	st.setStatus(StatusAllocated)
	st.ok("POST", part, "format", url.Values{"fstype": {"ext4"}})
	st.ok("POST", part, "mount", url.Values{"mount_point": {"/data"}})
	st.ok("POST", part, "unmount", nil)
	st.ok("POST", part, "unformat", nil)
	st.fails(409, "Cannot create partition because the node is not Ready.", "POST", sdb+"partitions/", "", nil)
	st.fails(409, "Cannot delete block device because the node is not Ready.", "DELETE", part, "", nil)
	st.fails(409, "Cannot create volume group because the machine is not Ready.", "POST", nodes+"volume-groups/", "", url.Values{"name": {"x"}})
	st.fails(409, "Cannot create logical volume because the machine is not Ready.", "POST", vgURI, "create_logical_volume", url.Values{"name": {"x"}})
	st.fails(409, "Cannot delete volume group because the machine is not Ready.", "DELETE", vgURI, "", nil)
	st.fails(409, "Cannot update block device because the machine is not Ready.", "POST", sdb, "add_tag", url.Values{"tag": {"ssd"}})
	st.fails(409, "Cannot set as boot disk because the machine is not Ready.", "POST", sdb, "set_boot_disk", nil)
	st.fails(409, "Cannot delete block device because the machine is not Ready.", "DELETE", sdb, "", nil)
	// Partition tags: MAAS checks no state.
	if p := st.ok("POST", part, "add_tag", url.Values{"tag": {"fast"}}); fmt.Sprint(p["tags"]) != "[fast]" {
		t.Fatalf("tags: %v", p["tags"])
	}

	// Deployed (and any other state): nothing.
	for _, status := range []int{StatusDeployed, StatusDeploying, StatusNew, StatusBroken} {
		st.setStatus(status)
		st.fails(409, "Cannot format block device because the machine is not Ready or Allocated.", "POST", sdb, "format", url.Values{"fstype": {"ext4"}})
		st.fails(409, "Cannot mount block device because the machine is not Ready or Allocated.", "POST", sdb, "mount", url.Values{"mount_point": {"/x"}})
		st.fails(409, "Cannot format partition because the node is not Ready or Allocated.", "POST", part, "format", url.Values{"fstype": {"ext4"}})
		st.fails(409, "Cannot unmount partition because the node is not Ready or Allocated.", "POST", part, "unmount", nil)
	}
	// Reading is always allowed.
	st.ok("GET", sdb, "", nil)
	st.ok("GET", vgURI, "", nil)
	// A Deployed machine's physical disk may be renamed (to replace it).
	st.setStatus(StatusDeployed)
	if b := st.ok("PUT", sdb, "", url.Values{"name": {"sdz"}, "serial": {"NEW"}}); b["name"] != "sdz" || b["serial"] != "NEW" {
		t.Fatalf("renamed: %v", b)
	}
}

// TestStorageValidation: MAAS's 400s and 404s.
func TestStorageValidation(t *testing.T) {
	st := newStorageSim(t)
	sda, sdb, nodes := st.bd("sda"), st.bd("sdb"), "/nodes/"+st.sid+"/"

	st.fails(404, "No BlockDevice matches the given query.", "GET", nodes+"blockdevices/99999/", "", nil)
	st.fails(404, "No Machine matches the given query.", "GET", "/nodes/nosuch/blockdevices/", "", nil)
	st.fails(404, "No PartitionTable matches the given query.", "GET", sdb+"partition/1", "", nil)
	st.fails(400, "Unrecognised signature: method=POST op=explode", "POST", sdb, "explode", nil)

	// format
	st.fails(400, fieldErr("fstype", "This field is required."), "POST", sdb, "format", nil)
	st.fails(400, fieldErr("fstype", "Select a valid choice. ntfs is not one of the available choices."), "POST", sdb, "format", url.Values{"fstype": {"ntfs"}})
	st.fails(400, fieldErr("__all__", "Cannot place filesystem directly on the boot disk. Create a partition on the boot disk first and then format the partition."),
		"POST", sda, "format", url.Values{"fstype": {"ext4"}})
	st.fails(400, fieldErr("__all__", "Cannot mount an unformatted partition or block device."), "POST", sdb, "mount", url.Values{"mount_point": {"/x"}})
	st.fails(400, "Block device is not formatted.", "POST", sdb, "unmount", nil)
	st.fails(400, "Block device is not formatted.", "POST", sdb, "unformat", nil)
	b := st.ok("POST", sdb, "format", url.Values{"fstype": {"ext4"}, "uuid": {"6ba7b810-9dad-41d1-80b4-00c04fd430c8"}})
	if f := b["filesystem"].(map[string]any); f["uuid"] != "6ba7b810-9dad-41d1-80b4-00c04fd430c8" || f["label"] != "" {
		t.Fatalf("format: %v", b)
	}
	st.fails(400, "Filesystem is already unmounted.", "POST", sdb, "unmount", nil)
	st.fails(400, fieldErr("mount_point", "This field is required."), "POST", sdb, "mount", nil)
	st.fails(400, fieldErr("mount_point", "Enter a valid value."), "POST", sdb, "mount", url.Values{"mount_point": {"srv"}})
	st.ok("POST", sdb, "mount", url.Values{"mount_point": {"/srv"}})
	st.fails(400, "Filesystem is mounted and cannot be unformatted. Unmount the filesystem before unformatting the block device.", "POST", sdb, "unformat", nil)
	nvme := st.bd("nvme0n1")
	st.ok("POST", nvme, "format", url.Values{"fstype": {"xfs"}})
	st.fails(400, fieldErr("__all__", "Another filesystem is already mounted at /srv."), "POST", nvme, "mount", url.Values{"mount_point": {"/srv"}})
	// swap mounts at "none".
	st.ok("POST", nvme, "format", url.Values{"fstype": {"swap"}})
	if b := st.ok("POST", nvme, "mount", nil); b["used_for"] != "swap formatted filesystem mounted at none" {
		t.Fatalf("swap: %v", b)
	}

	// partitions
	st.fails(400, fieldErr("size", fmt.Sprintf("Ensure this value is less than or equal to %d.", stSDA)), "POST", sda+"partitions/", "", url.Values{"size": {"1T"}})
	st.fails(400, fieldErr("size", "Ensure this value is greater than or equal to 4194304."), "POST", sda+"partitions/", "", url.Values{"size": {"1M"}})
	st.fails(400, fieldErr("size", "Enter a valid value."), "POST", sda+"partitions/", "", url.Values{"size": {"lots"}})
	st.fails(400, fieldErr("__all__", "Cannot create a partition table on a formatted block device."), "POST", sdb+"partitions/", "", nil)
	p := st.ok("POST", sda+"partitions/", "", url.Values{"size": {"4194305"}, "bootable": {"true"}})
	if num(p["size"]) != 4*stMiB || p["bootable"] != true {
		t.Fatalf("aligned partition: %v", p)
	}
	st.fails(400, fieldErr("__all__", "Cannot format block device with a partition table."), "POST", sda, "format", url.Values{"fstype": {"ext4"}})
	st.fails(404, "No Partition matches the given query.", "GET", sda+"partition/99999", "", nil)
	st.fails(400, "Partition is not formatted.", "POST", fmt.Sprintf("%spartition/%d", sda, num(p["id"])), "unmount", nil)
	st.fails(400, "No provided tag!", "POST", fmt.Sprintf("%spartition/%d", sda, num(p["id"])), "add_tag", nil)

	// volume groups
	st.fails(400, fieldErr("name", "This field is required."), "POST", nodes+"volume-groups/", "", url.Values{"uuid": {"x"}})
	st.fails(400, fieldErr("__all__", "At least one valid block device or partition is required."), "POST", nodes+"volume-groups/", "", url.Values{"name": {"vg"}})
	st.fails(400, fieldErr("block_devices", "Select a valid choice. sdb is not one of the available choices."),
		"POST", nodes+"volume-groups/", "", url.Values{"name": {"vg"}, "block_devices": {"sdb"}}) // formatted
	st.fails(400, fieldErr("partitions", "Select a valid choice. 424242 is not one of the available choices."),
		"POST", nodes+"volume-groups/", "", url.Values{"name": {"vg"}, "partitions": {"424242"}})
	st.ok("POST", sdb, "unmount", nil)
	st.ok("POST", sdb, "unformat", nil)
	vg := st.ok("POST", nodes+"volume-groups/", "", url.Values{"name": {"vg"}, "block_devices": {"sdb"}})
	vgURI := fmt.Sprintf("%svolume-group/%d/", nodes, num(vg["id"]))
	free := num(vg["available_size"])
	st.fails(400, fieldErr("size", fmt.Sprintf("Ensure this value is less than or equal to %d.", free)),
		"POST", vgURI, "create_logical_volume", url.Values{"name": {"big"}, "size": {fmt.Sprint(free + 1)}})
	st.fails(400, fieldErr("name", "This field is required."), "POST", vgURI, "create_logical_volume", url.Values{"size": {"1G"}})
	st.ok("POST", vgURI, "create_logical_volume", url.Values{"name": {"lv1"}, "size": {"1G"}})
	st.fails(400, fieldErr("__all__", "Block device with this Node config and Name already exists."),
		"POST", vgURI, "create_logical_volume", url.Values{"name": {"lv1"}, "size": {"1G"}})
	st.fails(404, "No VolumeGroup matches the given query.", "GET", nodes+"volume-group/77777/", "", nil)
	// Rename the group: its volumes follow.
	vg = st.ok("PUT", vgURI, "", url.Values{"name": {"data"}})
	if lv := vg["logical_volumes"].([]any)[0].(map[string]any); vg["name"] != "data" || lv["name"] != "data-lv1" {
		t.Fatalf("renamed group: %v", vg)
	}
	// Resize the volume with PUT.
	lvID := num(vg["logical_volumes"].([]any)[0].(map[string]any)["id"])
	lv := st.ok("PUT", fmt.Sprintf("%sblockdevices/%d/", nodes, lvID), "", url.Values{"size": {"2G"}, "name": {"lv2"}})
	if num(lv["size"]) != align4(2e9) || lv["name"] != "data-lv2" {
		t.Fatalf("resized: %v", lv)
	}
	st.fails(400, fieldErr("block_device", "Cannot create a partition table on a logical volume."), "POST", fmt.Sprintf("%sblockdevices/%d/partitions/", nodes, lvID), "", nil)
	st.fails(400, "Cannot set a virtual block device as the boot disk.", "POST", fmt.Sprintf("%sblockdevices/%d/", nodes, lvID), "set_boot_disk", nil)

	// block devices
	nb := st.ok("POST", nodes+"blockdevices/", "", url.Values{"name": {"sdx"}, "size": {"10G"}, "block_size": {"4096"},
		"model": {"Extra"}, "serial": {"X1"}})
	if nb["type"] != "physical" || num(nb["size"]) != 10e9 || num(nb["block_size"]) != 4096 || nb["used_for"] != "Unused" {
		t.Fatalf("created: %v", nb)
	}
	st.fails(400, fieldErr("__all__", "Block device with this Node config and Name already exists."),
		"POST", nodes+"blockdevices/", "", url.Values{"name": {"sdx"}, "size": {"10G"}, "block_size": {"512"}, "id_path": {"/dev/x"}})
	st.fails(400, fieldErr("__all__", "serial/model are required if id_path is not provided."),
		"POST", nodes+"blockdevices/", "", url.Values{"name": {"sdy"}, "size": {"10G"}, "block_size": {"512"}})
	code, body := st.call("POST", nodes+"blockdevices/", "", nil)
	var errs map[string][]string
	if code != 400 || json.Unmarshal([]byte(body), &errs) != nil || len(errs["name"]) != 1 || len(errs["size"]) != 1 || len(errs["block_size"]) != 1 {
		t.Fatalf("create without fields: %d %s", code, body)
	}
	nbPath := fmt.Sprintf("%sblockdevices/%d/", nodes, num(nb["id"]))
	if b := st.ok("POST", nbPath, "add_tag", url.Values{"tag": {"ssd"}}); fmt.Sprint(b["tags"]) != "[ssd]" {
		t.Fatalf("add_tag: %v", b)
	}
	if b := st.ok("POST", nbPath, "remove_tag", url.Values{"tag": {"ssd"}}); fmt.Sprint(b["tags"]) != "[]" {
		t.Fatalf("remove_tag: %v", b)
	}
	if code, _ := st.call("DELETE", nbPath, "", nil); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	st.fails(404, "No BlockDevice matches the given query.", "GET", nbPath, "", nil)

	// set_boot_disk: answers OK; the old boot disk may then be formatted whole.
	if code, body := st.call("POST", nvme, "set_boot_disk", nil); code != 200 || body != "OK" {
		t.Fatalf("set_boot_disk: %d %s", code, body)
	}
	if m := st.ok("GET", "/machines/"+st.sid+"/", "", nil); m["boot_disk"].(map[string]any)["name"] != "nvme0n1" {
		t.Fatalf("boot_disk: %v", m["boot_disk"])
	}
}

// TestStorageNodeDevices: the PCI inventory, after commissioning only.
func TestStorageNodeDevices(t *testing.T) {
	st := newStorageSim(t)
	path := "/nodes/" + st.sid + "/devices/"
	st.s.mu.Lock()
	st.m.commissioned = false
	st.s.mu.Unlock()
	if d := st.list(path, nil); len(d) != 0 {
		t.Fatalf("before commissioning: %v", d)
	}
	st.s.mu.Lock()
	st.m.commissioned = true
	ifaceID := st.m.Interfaces[0].ID
	st.s.mu.Unlock()
	devs := st.list(path, nil)
	if len(devs) != 2 {
		t.Fatalf("devices: %v", devs)
	}
	nic, disk := devs[0], devs[1]
	if num(nic["bus"]) != 1 || nic["bus_name"] != "PCIE" || num(nic["hardware_type"]) != 4 || nic["hardware_type_name"] != "Network" ||
		nic["vendor_id"] != "8086" || nic["product_id"] != "159b" || nic["vendor_name"] != "Intel Corporation" ||
		nic["commissioning_driver"] != "ice" || num(nic["bus_number"]) != 0x3b || num(nic["device_number"]) != 0 ||
		nic["pci_address"] != "0000:3b:00.0" || nic["physical_blockdevice"] != nil || num(nic["numa_node"]) != 0 ||
		nic["resource_uri"] != fmt.Sprintf("%s/nodes/%s/devices/%d/", APIPrefix, st.sid, num(nic["id"])) {
		t.Fatalf("nic: %v", nic)
	}
	if pi := nic["physical_interface"].(map[string]any); num(pi["id"]) != int64(ifaceID) {
		t.Fatalf("physical_interface: %v", pi)
	}
	if num(disk["hardware_type"]) != 3 || disk["pci_address"] != "0000:5e:00.0" || disk["commissioning_driver"] != "nvme" ||
		disk["physical_blockdevice"].(map[string]any)["name"] != "nvme0n1" || disk["physical_interface"] != nil {
		t.Fatalf("nvme: %v", disk)
	}
	if d := st.list(path, url.Values{"hardware_type": {"storage"}}); len(d) != 1 || num(d[0]["id"]) != num(disk["id"]) {
		t.Fatalf("storage devices: %v", d)
	}
	if d := st.list(path, url.Values{"bus": {"usb"}}); len(d) != 0 {
		t.Fatalf("usb devices: %v", d)
	}
	if d := st.list(path, url.Values{"vendor_id": {"8086"}}); len(d) != 1 {
		t.Fatalf("intel devices: %v", d)
	}
	st.fails(400, "Bus must be PCIE or USB!", "GET", path, "", url.Values{"bus": {"isa"}})
	for _, id := range []string{fmt.Sprint(num(nic["id"])), "0000:3b:00.0"} {
		if d := st.ok("GET", path+id+"/", "", nil); num(d["id"]) != num(nic["id"]) {
			t.Fatalf("GET %s: %v", id, d)
		}
	}
	// Ids are stable.
	if again := st.list(path, nil); num(again[0]["id"]) != num(nic["id"]) {
		t.Fatalf("ids changed: %v", again)
	}
	st.fails(404, "No NodeDevice matches the given query.", "GET", path+"99999/", "", nil)
}

// gomaasMachine reads the test machine with gomaasapi (which checks the
// JSON of every block device and partition).
func (st *storageSim) gomaasMachine() gomaasapi.Machine {
	st.t.Helper()
	c, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: st.hs.URL + "/MAAS", APIKey: "ck:tk:ts"})
	if err != nil {
		st.t.Fatal(err)
	}
	ms, err := c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{st.sid}})
	if err != nil || len(ms) != 1 {
		st.t.Fatalf("gomaasapi machines: %v %v", ms, err)
	}
	return ms[0]
}

// TestStorageGomaasapiClient drives the storage API with gomaasapi's own
// client (multipart POSTs, its OAuth signing).
func TestStorageGomaasapiClient(t *testing.T) {
	st := newStorageSim(t)
	c, err := gomaasapi.NewAuthenticatedClient(st.hs.URL+"/MAAS/api/2.0/", "ck:tk:ts")
	if err != nil {
		t.Fatal(err)
	}
	u := func(p string) *url.URL { x, _ := url.Parse(strings.TrimPrefix(p, "/")); return x }
	out, err := c.Post(u(st.bd("sdb")+"partitions/"), "", url.Values{"size": {"20G"}}, map[string][]byte{})
	if err != nil {
		t.Fatalf("create partition: %v", err)
	}
	var p map[string]any
	_ = json.Unmarshal(out, &p)
	if num(p["size"]) != align4(20e9) {
		t.Fatalf("partition: %s", out)
	}
	part := fmt.Sprintf("%spartition/%d", st.bd("sdb"), num(p["id"]))
	if _, err := c.Post(u(part), "format", url.Values{"fstype": {"ext4"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Post(u(part), "mount", url.Values{"mount_point": {"/srv"}}, nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.Post(u(st.bd("sdb")+"partitions/"), "", url.Values{"size": {"200G"}}, nil)
	if se, ok := gomaasapi.GetServerError(err); !ok || se.StatusCode != 400 {
		t.Fatalf("oversized partition: %v", err)
	}
	if _, err := c.Post(u("/machines/"+st.sid+"/"), "set_storage_layout", url.Values{"storage_layout": {"lvm"}}, map[string][]byte{}); err != nil {
		t.Fatalf("set_storage_layout: %v", err)
	}
	st.setStatus(StatusDeployed)
	_, err = c.Post(u("/machines/"+st.sid+"/"), "set_storage_layout", url.Values{"storage_layout": {"flat"}}, nil)
	if se, ok := gomaasapi.GetServerError(err); !ok || se.StatusCode != 409 {
		t.Fatalf("set_storage_layout when Deployed: %v", err)
	}
	gm := st.gomaasMachine()
	var root gomaasapi.FileSystem
	for _, b := range gm.BlockDevices() {
		// gomaasapi's BlockDevice.FileSystem is a non-nil interface even
		// without a filesystem.
		if b.UsedFor() == "ext4 formatted filesystem mounted at /" {
			root = b.FileSystem()
		}
	}
	if root == nil || root.Type() != "ext4" || root.Label() != "root" {
		t.Fatalf("root filesystem: %+v", root)
	}
}

// TestStorageDefaultLayout: the hook commissioning can call applies MAAS's
// default_storage_layout (flat unless configured).
func TestStorageDefaultLayout(t *testing.T) {
	st := newStorageSim(t)
	st.s.mu.Lock()
	st.s.applyDefaultStorageLayout(st.m)
	layout, n := st.m.StorageLayout, len(st.m.bootDisk().Partitions)
	st.s.config["default_storage_layout"] = "lvm"
	st.s.applyDefaultStorageLayout(st.m)
	groups := len(st.m.VolumeGroups)
	st.s.mu.Unlock()
	if layout != "flat" || n != 2 || groups != 1 {
		t.Fatalf("default layouts: %s with %d partitions, then %d volume groups", layout, n, groups)
	}
}
