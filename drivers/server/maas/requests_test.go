package maas

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/gensite"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/sim/lab"
)

// genDesign is a generated site (internal/gensite, the layout of the
// scale benchmarks) of n nodes.
func genDesign(t testing.TB, n int) *design.Design {
	t.Helper()
	dir := t.TempDir()
	if _, err := gensite.Write(dir, gensite.Options{Nodes: n}); err != nil {
		t.Fatal(err)
	}
	res, err := yamlingest.Load(t.Context(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	d, fs := design.Build(res.Sources)
	if fs.HasErrors() {
		t.Fatal(fs)
	}
	return d
}

// kinds is the lab's request counts by kind ("GET /machines/{machine}/").
func kinds(l *lab.Lab) map[string]int {
	out := map[string]int{}
	for _, r := range l.MAAS.Stats().Snapshot().Requests {
		out[r.Request] = r.Count
	}
	return out
}

// settled is kinds once the lab has recorded every request answered
// (labSettle).
func settled(l *lab.Lab) map[string]int {
	labSettle(l)
	return kinds(l)
}

// labSettle waits until the lab has recorded every request answered: the
// lab records a request when its handler returns, which can be just
// after the client has read a long answer, so the count is read again
// until two reads 20 ms apart agree (at most 2 s).
func labSettle(l *lab.Lab) {
	last := l.MAAS.Stats().Snapshot().Total
	for range 100 {
		time.Sleep(20 * time.Millisecond)
		now := l.MAAS.Stats().Snapshot().Total
		if now == last {
			return
		}
		last = now
	}
}

// delta is after minus before, by kind, leaving out kinds that did not move.
func delta(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range after {
		if d := n - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// nodePhases runs a generated node through the driver calls the engine
// makes for a deploy (identify, commission, inventory, the configure
// stage's status read, networking, storage, platform, deploy) and answers
// the lab's requests of each phase by kind. It reads the changes feed
// (Changes) where the engine's poller would: before the node is
// identified, after its commissioning, and before its deploy, which
// starts after the read cache's TTL (machineTTL) on the driver's clock.
// A second node of the same hardware is commissioned beside it and
// configured after it: its storage is phase "storage2", and its platform
// step, "platform2", comes more than machineTTL after its networking read
// the machine (the configure stage queued behind others), but less after
// its storage was cloned.
func nodePhases(t *testing.T) (map[string]map[string]int, *lab.Lab, *Driver, []drivers.Node) {
	t.Helper()
	d := genDesign(t, 2)
	l, drv := cfgLab(t, d)
	skew := skewClock(drv)
	cfgSubnets(t, drv, driverspec.Site(d))
	names := slices.Sorted(maps.Keys(d.Nodes))
	var nodes []drivers.Node
	for _, name := range names {
		nodes = append(nodes, driverspec.Node(d, d.Nodes[name], ""))
	}
	out := map[string]map[string]int{}
	phase := func(what string, fn func()) {
		before := settled(l)
		fn()
		out[what] = delta(settled(l), before)
	}
	feed := changesFeed(t, drv)
	n := &nodes[0]
	phase("identify", func() { n.MachineID = identify(t, drv, *n).MachineID })
	nodes[1].MachineID = identify(t, drv, nodes[1]).MachineID
	// Powered on once enlisted: a machine that PXE-boots before its
	// create enlists itself after the lab's enlistment time (90 ms here),
	// and on a loaded machine that came first (the create then failed and
	// commissioning took a request of its own).
	for _, name := range names {
		pxeBoot(l.Machine(name))
	}
	if _, err := drv.Commission(t.Context(), nodes[1].NodeRef); err != nil { // both commission at once
		t.Fatal(err)
	}
	phase("commission", func() {
		mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return drv.Commission(ctx, n.NodeRef) })
	})
	feed()
	phase("inventory", func() {
		if _, err := drv.Inventory(t.Context(), *n); err != nil {
			t.Fatal(err)
		}
	})
	phase("configure", func() { configureNode(t, drv, *n, nil) })
	skew(drv.c.cache.machineTTL + time.Second)
	feed()
	phase("deploy", func() {
		if r, err := drv.Deploy(t.Context(), *n, drivers.Deployment{}); err != nil || r.Status == drivers.StatusFailed {
			t.Fatalf("Deploy: %+v %v", r, err)
		}
	})
	mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return drv.Commission(ctx, nodes[1].NodeRef) })
	configureNode(t, drv, nodes[1], func(step string, fn func()) {
		switch step {
		case "storage":
			skew(drv.c.cache.machineTTL - time.Second)
			phase("storage2", fn)
		case "platform":
			skew(2 * time.Second)
			phase("platform2", fn)
		default:
			fn()
		}
	})
	for _, p := range []string{"identify", "commission", "inventory", "configure", "deploy", "storage2", "platform2"} {
		t.Logf("%s: %v", p, out[p])
	}
	return out, l, drv, nodes
}

// skewClock sets the driver's read cache on a clock that the answered
// function moves ahead (the lab's own time is not moved).
func skewClock(drv *Driver) func(time.Duration) {
	var off atomic.Int64
	drv.c.cache.now = func() time.Time { return time.Now().Add(time.Duration(off.Load())) }
	return func(d time.Duration) { off.Add(int64(d)) }
}

// changesFeed reads the driver's changes from where its last call left,
// as the engine's poller does each poll.
func changesFeed(t *testing.T, drv *Driver) func() {
	cursor := ""
	return func() {
		t.Helper()
		c, err := drv.Changes(t.Context(), cursor)
		if err != nil {
			t.Fatal(err)
		}
		cursor = c.Cursor
	}
}

// configureNode runs the configure stage's calls on n; step, when not
// nil, wraps each ("status", "networking", "storage", "platform").
func configureNode(t *testing.T, drv *Driver, n drivers.Node, step func(string, func())) {
	t.Helper()
	if step == nil {
		step = func(_ string, fn func()) { fn() }
	}
	step("status", func() {
		if _, err := drv.Status(t.Context(), []drivers.NodeRef{n.NodeRef}); err != nil {
			t.Fatal(err)
		}
	})
	step("networking", func() {
		mustDone(t, "ApplyNetworking", func(ctx context.Context) (drivers.Result, error) { return drv.ApplyNetworking(ctx, n) })
	})
	step("storage", func() {
		mustDone(t, "ApplyStorage", func(ctx context.Context) (drivers.Result, error) { return drv.ApplyStorage(ctx, n) })
	})
	step("platform", func() {
		mustDone(t, "ApplyPlatform", func(ctx context.Context) (drivers.Result, error) { return drv.ApplyPlatform(ctx, n) })
	})
}

// polls leaves out the reads a waiting step repeats (the machine's state
// while commissioning runs): what is left is what one pass costs.
func withoutPolls(k map[string]int) map[string]int {
	out := maps.Clone(k)
	for key := range out {
		if strings.HasPrefix(key, "GET /machines/ ") || key == "GET /machines/" {
			delete(out, key)
		}
	}
	return out
}

// TestNodeRequestsByKind: one generated node costs MAAS no read the
// driver made a moment before, counted by the lab by kind. Each subtest
// is one cut (issue #39) and failed before it.
func TestNodeRequestsByKind(t *testing.T) {
	t.Parallel()
	ph, l, drv, nodes := nodePhases(t)
	cfg := withoutPolls(ph["configure"])
	none := func(t *testing.T, k string) {
		if cfg[k] != 0 {
			t.Errorf("configure: %d %s, want none (all requests: %v)", cfg[k], k, cfg)
		}
	}
	// Configure takes the machine the inventory read a moment before,
	// though the configure stage's status read came in between (it
	// replaced the full read in the cache with the state alone).
	t.Run("ConfigureKeepsInventoryRead", func(t *testing.T) { none(t, "GET /machines/{machine}/") })
	// Networking links on the interfaces its writes' answers describe
	// (it read them all again after making the bond and VLANs).
	t.Run("NetworkingNoReread", func(t *testing.T) {
		none(t, "GET /nodes/{node}/interfaces/")
		networkingAsDesigned(t, drv, nodes[0])
	})
	// Storage takes the volume group the LVM layout made from the
	// layout's answer (it read the volume groups after the layout).
	t.Run("LayoutNoVGRead", func(t *testing.T) { none(t, "GET /nodes/{node}/volume-groups/") })
	// Enlisting the machine starts its commissioning (MAAS's create
	// commissions when asked, with the commission's parameters): the
	// commission step then only waits (it started it in a request of
	// its own).
	t.Run("EnlistCommissions", func(t *testing.T) {
		if ph["identify"]["POST /machines/"] != 1 || ph["commission"]["POST /machines/{machine}/?op=commission"] != 0 {
			t.Errorf("identify %v, commission %v: want the create alone", ph["identify"], ph["commission"])
		}
		if c := l.MAAS.LastCommission(nodes[0].MachineID); !c.SkipBMCConfig {
			t.Errorf("the create's commissioning: %+v, want skip_bmc_config", c)
		}
	})
	t.Run("StorageAsDesigned", func(t *testing.T) { storageAsDesigned(t, l, drv, nodes[0]) })
	// The second node of the same hardware gets its storage by MAAS's
	// clone of the first's and one read to check it (it was built like
	// the first's: the layout, then each logical volume created,
	// formatted and mounted), and it is the design's in the lab's view.
	t.Run("StorageByClone", func(t *testing.T) {
		want := map[string]int{"POST /machines/?op=clone": 1, "GET /machines/{machine}/": 1}
		if got := ph["storage2"]; !maps.Equal(got, want) {
			t.Errorf("second node's storage: requests %v, want %v", got, want)
		}
		storageAsDesigned(t, l, drv, nodes[1])
		w0, _ := cfgWrites(l)
		if r, err := drv.ApplyStorage(t.Context(), nodes[1]); err != nil || !strings.Contains(r.Message, "already configured") {
			t.Errorf("storage again: %+v %v", r, err)
		}
		if w1, _ := cfgWrites(l); w1 != w0 {
			t.Errorf("storage again wrote %d times", w1-w0)
		}
	})
	// The platform step after a storage clone takes the machine the
	// clone's check read (it read the machine again when the networking
	// step's read had aged out).
	t.Run("PlatformAfterCloneNoRead", func(t *testing.T) {
		if got := ph["platform2"]["GET /machines/{machine}/"]; got != 0 {
			t.Errorf("platform after the clone: %d machine reads, want none (all: %v)", got, ph["platform2"])
		}
	})
	// Deploy looks at the machine's state in the read the inventory
	// made, older than machineTTL but followed by the changes feed, which
	// shows no status change of it since (it read the machine again);
	// and the deploy started in the lab.
	t.Run("DeployLookByFeed", func(t *testing.T) {
		if got := ph["deploy"]["GET /machines/{machine}/"]; got != 0 {
			t.Errorf("deploy: %d machine reads, want none (all: %v)", got, ph["deploy"])
		}
		if st := labStatus(l, nodes[0].MachineID); st != "Deploying" && st != "Deployed" {
			t.Errorf("the lab's machine is %s after Deploy, want Deploying or Deployed", st)
		}
	})
	// Inventory decodes the lab's machine and node devices answers once
	// each, into what it decoded in two passes before.
	t.Run("InventoryDecodesOnce", func(t *testing.T) {
		id := nodes[0].MachineID
		for path, same := range map[string]func([]byte) string{"machines/" + id + "/": sameMachine, "nodes/" + id + "/devices/": sameDevices} {
			raw, err := drv.c.getRaw(t.Context(), path, "")
			if err != nil {
				t.Fatal(err)
			}
			if diff := same(raw); diff != "" {
				t.Errorf("%s: %s", path, diff)
			}
		}
	})
	// Inventory reads the machine, its node devices and its
	// commissioning details once each (it read the machine and the node
	// devices twice).
	t.Run("InventoryReadsOnce", func(t *testing.T) {
		want := map[string]int{"GET /machines/{machine}/": 1, "GET /nodes/{node}/devices/": 1, "GET /machines/{machine}/?op=details": 1}
		if got := ph["inventory"]; !maps.Equal(got, want) {
			t.Errorf("inventory: requests %v, want %v", got, want)
		}
	})
}

// storageAsDesigned checks the machine's storage in the lab's own account
// (its volume groups and block devices, read from the lab's API, not
// through the driver) against the node's design: each volume group with
// the design's logical volumes, their sizes and filesystems; and the
// volume group the driver tells from a machine answer
// (layoutAnswer.volumeGroup) equals the lab's.
func storageAsDesigned(t *testing.T, l *lab.Lab, drv *Driver, n drivers.Node) {
	var vgs []mVolumeGroup
	cfgCall(t, drv, "GET", "nodes/"+n.MachineID+"/volume-groups/", "", nil, &vgs)
	if len(vgs) != len(n.Storage.VolumeGroups) {
		t.Fatalf("the lab has %d volume groups, the design %d", len(vgs), len(n.Storage.VolumeGroups))
	}
	for _, want := range n.Storage.VolumeGroups {
		i := slices.IndexFunc(vgs, func(v mVolumeGroup) bool { return v.Name == want.Name })
		if i < 0 {
			t.Fatalf("no volume group %s in the lab: %+v", want.Name, vgs)
		}
		vg := vgs[i]
		if len(vg.LVs) != len(want.LogicalVolumes) || vg.Avail != 0 {
			t.Errorf("volume group %s: %d logical volumes, %d bytes free; the design %d, none free", vg.Name, len(vg.LVs), vg.Avail, len(want.LogicalVolumes))
		}
		for _, lv := range want.LogicalVolumes {
			k := slices.IndexFunc(vg.LVs, func(b mBlockDevice) bool { return b.Name == vg.Name+"-"+lv.Name })
			if k < 0 {
				t.Errorf("no logical volume %s-%s in the lab", vg.Name, lv.Name)
				continue
			}
			var bd mBlockDevice
			cfgCall(t, drv, "GET", "nodes/"+n.MachineID+"/blockdevices/"+itoa(vg.LVs[k].ID)+"/", "", nil, &bd)
			size, err := design.ParseSize(lv.Size)
			if err != nil {
				t.Fatal(err)
			}
			if !size.AtLeast && size.Percent == 0 && (bd.Size > size.Bytes || bd.Size < size.Bytes-2*alignment) {
				t.Errorf("logical volume %s: %d bytes, the design %s", bd.Name, bd.Size, lv.Size)
			}
			if !fsMatches(lv.Filesystem, bd.FS) {
				t.Errorf("logical volume %s: filesystem %+v, the design %+v", bd.Name, bd.FS, lv.Filesystem)
			}
		}
	}
	var ans layoutAnswer
	cfgCall(t, drv, "GET", "machines/"+n.MachineID+"/", "", nil, &ans)
	got, ok := ans.volumeGroup(vgs[0].Name)
	if !ok || len(got) != 1 {
		t.Fatalf("volume group from the machine: %+v %v", got, ok)
	}
	g, w := got[0], vgs[0]
	same := g.ID == w.ID && g.Name == w.Name && g.Size == w.Size && g.Avail == w.Avail && slices.Equal(g.Devices, w.Devices) && len(g.LVs) == len(w.LVs)
	for i := range g.LVs {
		same = same && i < len(w.LVs) && g.LVs[i].ID == w.LVs[i].ID && g.LVs[i].Size == w.LVs[i].Size
	}
	if !same {
		t.Errorf("volume group from the machine\n %+v\nthe lab's\n %+v", g, w)
	}
	_ = l
}

// networkingAsDesigned checks the machine's interfaces in the lab's own
// account (GET interfaces/, not through the driver) against the design:
// each design interface exists (a bond over as many parents as the
// design's devices, its parents without links), and each static address
// of the design is linked once, on an interface of its network's VLAN.
func networkingAsDesigned(t *testing.T, drv *Driver, n drivers.Node) {
	var ifaces []mInterface
	cfgCall(t, drv, "GET", "nodes/"+n.MachineID+"/interfaces/", "", nil, &ifaces)
	byName, checked := map[string]mInterface{}, 0
	for _, in := range ifaces {
		byName[in.Name] = in
	}
	for _, in := range n.Interfaces {
		have, ok := byName[in.Name]
		switch {
		case !ok:
			t.Errorf("no interface %s in the lab: %v", in.Name, slices.Collect(maps.Keys(byName)))
			continue
		case in.Link.Bonded() && (have.Type != "bond" || len(have.Parents) != len(in.Devices)):
			t.Errorf("interface %s: %s over %v, the design a bond of %d", in.Name, have.Type, have.Parents, len(in.Devices))
		}
		for _, p := range have.Parents {
			if len(byName[p].Links) > 0 {
				t.Errorf("bond %s's parent %s has links %+v", in.Name, p, byName[p].Links)
			}
		}
		for _, net := range in.Networks {
			if net.Address == "" || net.Address == "dhcp" {
				continue
			}
			found := 0
			checked++
			for _, x := range ifaces {
				for _, l := range x.Links {
					if l.IP == net.Address && l.Mode == "static" && x.VLAN != nil && x.VLAN.VID == net.VLAN {
						found++
					}
				}
			}
			if found != 1 {
				t.Errorf("address %s (network %s, VLAN %d) linked %d times, want once", net.Address, net.Name, net.VLAN, found)
			}
		}
	}
	if checked == 0 {
		t.Error("the design has no static address to check")
	}
}
