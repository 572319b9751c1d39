package maas

import (
	"net/url"
	"strconv"
	"testing"
	"time"
)

func TestReadCacheMachine(t *testing.T) {
	c := newReadCache(time.Hour)
	put := func(id, state string) {
		c.putMachines(c.begin(), []mMachine{{mMachineState: mMachineState{SystemID: id, StatusName: state}}})
	}
	hit := func(id string, need part) bool { _, ok := c.machine(id, need); return ok }

	put("a", "Ready")
	if m, ok := c.machine("a", partAll); !ok || m.StatusName != "Ready" {
		t.Fatalf("a fresh read is not answered: %v %v", m, ok)
	}
	// A write of the interfaces leaves the storage and tags as read.
	c.wrote("nodes/a/interfaces/5/", "link_subnet", nil)
	if hit("a", partInterfaces) || !hit("a", partStorage|partTags) {
		t.Errorf("after an interface write: interfaces %v, storage and tags %v", hit("a", partInterfaces), hit("a", partStorage|partTags))
	}
	c.wrote("tags/x/", "update_nodes", url.Values{"add": {"a", "b"}})
	if hit("a", partTags) || !hit("a", partStorage) {
		t.Error("a tag update must make the tags stale, only")
	}
	// Any other write of the machine drops it.
	c.wrote("machines/a/", "set_owner_data", nil)
	if hit("a", 0) {
		t.Error("set_owner_data left the machine in the cache")
	}
	put("b", "Ready")
	c.wrote("machines/", "allocate", url.Values{"system_id": {"b"}})
	if hit("b", 0) {
		t.Error("an allocation naming the machine left it in the cache")
	}
	// A read that a write overlapped is not kept (or only with the part
	// written marked stale).
	since := c.begin()
	c.wrote("machines/c/", "deploy", nil)
	c.putMachines(since, []mMachine{{mMachineState: mMachineState{SystemID: "c"}}})
	if hit("c", 0) {
		t.Error("a read overlapped by a write was kept")
	}
	since = c.begin()
	c.wrote("machines/d/", "set_storage_layout", nil)
	c.putMachines(since, []mMachine{{mMachineState: mMachineState{SystemID: "d"}}})
	if hit("d", partStorage) || !hit("d", partInterfaces) {
		t.Error("a read overlapped by a storage write: storage must be stale, the rest not")
	}
	// Reads age out.
	short := newReadCache(time.Millisecond)
	short.putMachines(short.begin(), []mMachine{{mMachineState: mMachineState{SystemID: "e"}}})
	time.Sleep(5 * time.Millisecond)
	if _, ok := short.machine("e", 0); ok {
		t.Error("a read older than the TTL was answered")
	}
	// Off: nothing is kept.
	off := newReadCache(0)
	off.putMachines(off.begin(), []mMachine{{mMachineState: mMachineState{SystemID: "f"}}})
	if _, ok := off.machine("f", 0); ok {
		t.Error("cacheTTL=0 still caches")
	}
}

func TestReadCacheDevices(t *testing.T) {
	c := newReadCache(time.Hour)
	c.putDevices(c.begin(), "a", []nodeDevice{{PCIAddress: "0000:01:00.0"}})
	c.wrote("nodes/a/interfaces/3/", "", nil) // a NIC renamed
	if _, ok := c.nodeDevices("a", true); ok {
		t.Error("interface names answered after an interface write")
	}
	if _, ok := c.nodeDevices("a", false); !ok {
		t.Error("disks not answered after an interface write")
	}
	c.wrote("machines/a/", "commission", nil)
	if _, ok := c.nodeDevices("a", false); ok {
		t.Error("devices answered after commissioning restarted")
	}
}

func TestReadCacheListsDroppedByWrites(t *testing.T) {
	c := newReadCache(time.Hour)
	for _, tc := range []struct{ path, op, list string }{
		{"subnets/4/", "", "subnets/?op="},
		{"vlans/2/", "", "subnets/?op="},
		{"tags/", "", "tags/?op="},
		{"domains/", "", "domains/?op="},
		{"machines/a/", "", "machines/?op=power_parameters"},
	} {
		c.lists[tc.list] = cachedList{body: []byte("[]"), at: time.Now()}
		p := url.Values{}
		if tc.list == "machines/?op=power_parameters" {
			p.Set("power_type", "ipmi")
		}
		c.wrote(tc.path, tc.op, p)
		if _, ok := c.lists[tc.list]; ok {
			t.Errorf("a write of %s left %s", tc.path, tc.list)
		}
	}
	c.lists["tags/?op="] = cachedList{body: []byte("[]"), at: time.Now()}
	c.wrote("tags/x/", "update_nodes", url.Values{"add": {"a"}})
	if _, ok := c.lists["tags/?op="]; !ok {
		t.Error("tagging a machine dropped the tag list")
	}
}

// TestReadCacheForgetsOldMachines: machines older than the TTL do not
// stay in memory.
func TestReadCacheForgetsOldMachines(t *testing.T) {
	c := newReadCache(time.Millisecond)
	for i := range 6000 {
		c.putMachines(c.begin(), []mMachine{{mMachineState: mMachineState{SystemID: strconv.Itoa(i)}}})
		if i == 1500 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if n := len(c.machines); n >= 6000 {
		t.Errorf("%d machines kept, the old ones were never dropped", n)
	}
}

// TestReadCacheStatusReads: a machine read by a status poll (state only)
// answers the state, never its interfaces or storage.
func TestReadCacheStatusReads(t *testing.T) {
	c := newReadCache(time.Hour)
	st := mMachineState{SystemID: "a", StatusName: "Ready", OwnerData: map[string]string{"k": "v"}}
	c.putRead(c.begin(), []mMachine{st.machine()}, partInterfaces|partStorage)
	if m, ok := c.machine("a", 0); !ok || m.StatusName != "Ready" || m.OwnerData["k"] != "v" {
		t.Errorf("the state is not answered: %+v %v", m, ok)
	}
	for _, p := range []part{partInterfaces, partStorage} {
		if _, ok := c.machine("a", p); ok {
			t.Errorf("a status read answered part %d", p)
		}
	}
}
