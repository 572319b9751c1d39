package maas

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// addMachine adds a Ready machine with the given disks (name → size) to
// the storage simulator and answers its system ID.
func (st *storageSim) addMachine(host string, disks ...Disk) string {
	st.t.Helper()
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	m := st.s.newMachine(host, "", []string{fmt.Sprintf("52:54:00:00:20:%02x", len(st.s.machines))})
	m.hw = &Hardware{Arch: "amd64/generic", CPUs: 8, MemoryMiB: 16384, Disks: disks}
	st.s.discoverDisks(m)
	m.commissioned, m.Status = true, StatusReady
	return m.SystemID
}

// storageShape is a machine's storage as its API shows it, without IDs
// and UUIDs: each block device's partitions (size, bootable, filesystem),
// each volume group's name, size and logical volumes.
func (st *storageSim) storageShape(sid string) string {
	st.t.Helper()
	var b strings.Builder
	fs := func(v any) string {
		f, _ := v.(map[string]any)
		if f == nil {
			return "-"
		}
		return fmt.Sprintf("%v:%v:%v:%v", f["fstype"], f["label"], f["mount_point"], f["mount_options"])
	}
	for _, bd := range st.list("/nodes/"+sid+"/blockdevices/", nil) {
		fmt.Fprintf(&b, "%v %v %d %s [", bd["name"], bd["type"], num(bd["size"]), fs(bd["filesystem"]))
		for _, p := range bd["partitions"].([]any) {
			p := p.(map[string]any)
			fmt.Fprintf(&b, "%d %v %s; ", num(p["size"]), p["bootable"], fs(p["filesystem"]))
		}
		b.WriteString("]\n")
	}
	for _, vg := range st.list("/nodes/"+sid+"/volume-groups/", nil) {
		fmt.Fprintf(&b, "vg %v %d %d:", vg["name"], num(vg["size"]), num(vg["available_size"]))
		for _, lv := range vg["logical_volumes"].([]any) {
			lv := lv.(map[string]any)
			fmt.Fprintf(&b, " %v %d %s", lv["name"], num(lv["size"]), fs(lv["filesystem"]))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestStorageClone: POST /machines/?op=clone copies the source's storage
// (the lvm layout and a logical volume added to it) onto destinations
// with the same disks, in one request answered 204; the destinations'
// storage then reads as the source's. A destination that cannot take it
// (a smaller boot disk, not Ready, the source itself) fails the request
// with MAAS's field errors and changes nothing; interfaces=true is
// refused (the simulator clones storage only).
func TestStorageClone(t *testing.T) {
	st := newStorageSim(t)
	disks := st.m.hw.Disks
	a, b := st.addMachine("st2", disks...), st.addMachine("st3", disks...)
	st.ok("POST", "/machines/"+st.sid+"/", "set_storage_layout", url.Values{"storage_layout": {"lvm"}, "lv_size": {"20000000000"}, "vg_name": {"vg0"}})
	vgs := st.list("/nodes/"+st.sid+"/volume-groups/", nil)
	lv := st.ok("POST", fmt.Sprintf("/nodes/%s/volume-group/%d/", st.sid, num(vgs[0]["id"])), "create_logical_volume", url.Values{"name": {"var"}})
	st.ok("POST", fmt.Sprintf("/nodes/%s/blockdevices/%d/", st.sid, num(lv["id"])), "format", url.Values{"fstype": {"xfs"}})
	st.ok("POST", fmt.Sprintf("/nodes/%s/blockdevices/%d/", st.sid, num(lv["id"])), "mount", url.Values{"mount_point": {"/var"}})
	want := st.storageShape(st.sid)
	before := st.storageShape(a)

	small := st.addMachine("st4", Disk{Name: "sda", Bus: "scsi", Addr: "0:0:0:0", Size: stSDA / 2})
	for _, c := range []struct {
		form  url.Values
		field string
		msg   string
	}{
		{url.Values{"source": {st.sid}, "destinations": {a, small}, "storage": {"true"}}, "destinations",
			small + " (st4) is invalid: destination boot disk(sda) is smaller than source boot disk(sda)"},
		{url.Values{"source": {st.sid}, "destinations": {a, st.sid}, "storage": {"true"}}, "destinations",
			"Source machine " + st.sid + " (st1) cannot be a destination machine."},
		{url.Values{"source": {st.sid}, "destinations": {a}}, "__all__", "Either storage or interfaces must be true."},
		{url.Values{"destinations": {a}, "storage": {"true"}}, "source", "This field is required."},
	} {
		st.fails(http.StatusBadRequest, fieldErr(c.field, c.msg), "POST", "/machines/", "clone", c.form)
	}
	st.s.mu.Lock()
	st.s.machines[b].Status = StatusDeployed
	st.s.mu.Unlock()
	st.fails(http.StatusBadRequest, fieldErr("destinations", "Machine 2 is invalid: Select a valid choice. "+b+" is not one of the available choices."),
		"POST", "/machines/", "clone", url.Values{"source": {st.sid}, "destinations": {a, b}, "storage": {"1"}})
	st.fails(http.StatusBadRequest, "The simulator clones storage only (interfaces=true is not implemented).",
		"POST", "/machines/", "clone", url.Values{"source": {st.sid}, "destinations": {a}, "interfaces": {"true"}})
	if got := st.storageShape(a); got != before {
		t.Fatalf("a refused clone changed the destination:\n%s\nwas\n%s", got, before)
	}

	if code, body := st.call("POST", "/machines/", "clone", url.Values{"source": {st.sid}, "destinations": {a}, "storage": {"true"}}); code != http.StatusNoContent {
		t.Fatalf("clone: %d %s", code, body)
	}
	if got := st.storageShape(a); got != want {
		t.Errorf("the clone's storage:\n%s\nthe source's:\n%s", got, want)
	}
	if !strings.Contains(want, "vg vg0") || !strings.Contains(want, "vg0-var") {
		t.Fatalf("the source's storage is not what the test built:\n%s", want)
	}
}

// TestStorageCloneIsOneMachineWrite: a clone changes only its
// destinations, so it neither moves the shared revision (which rebuilds
// every machine's address, MAC and hostname indexes at the next
// link_subnet: at 10,000 nodes, one rebuild per clone) nor leaves a
// destination's cached listing stale (TestMain checks every cache hit).
func TestStorageCloneIsOneMachineWrite(t *testing.T) {
	st := newStorageSim(t)
	a := st.addMachine("st2", st.m.hw.Disks...)
	st.ok("POST", "/machines/"+st.sid+"/", "set_storage_layout", url.Values{"storage_layout": {"lvm"}, "vg_name": {"vg0"}})
	st.list("/machines/", nil) // the listing cache holds a
	st.s.mu.Lock()
	shared, rev := st.s.sharedRev.Load(), st.s.machines[a].rev
	st.s.mu.Unlock()
	if code, body := st.call("POST", "/machines/", "clone", url.Values{"source": {st.sid}, "destinations": {a}, "storage": {"true"}}); code != http.StatusNoContent {
		t.Fatalf("clone: %d %s", code, body)
	}
	st.s.mu.Lock()
	sharedAfter, revAfter := st.s.sharedRev.Load(), st.s.machines[a].rev
	st.s.mu.Unlock()
	if sharedAfter != shared {
		t.Errorf("a clone moved the shared revision %d -> %d", shared, sharedAfter)
	}
	if revAfter == rev {
		t.Errorf("a clone left its destination's revision at %d", rev)
	}
	found := false
	for _, m := range st.list("/machines/", nil) {
		if m["system_id"] == a {
			found = strings.Contains(fmt.Sprint(m["blockdevice_set"]), "vg0")
		}
	}
	if !found {
		t.Errorf("the listing does not show %s's cloned storage", a)
	}
}
