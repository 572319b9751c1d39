package maas

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/sim/lab"
	simmaas "github.com/slipway-dev/slipway/sim/maas"
)

// planOne plans one node and checks that planning wrote nothing to MAAS
// (the lab's own count of POST, PUT and DELETE requests).
func planOne(t *testing.T, l *lab.Lab, drv *Driver, n drivers.Node) drivers.MachinePlan {
	t.Helper()
	w0, _ := cfgWrites(l)
	k0 := l.MAAS.Stats().ByKind()
	ps, err := drv.PlanNodes(t.Context(), []drivers.Node{n})
	if err != nil {
		t.Fatalf("PlanNodes: %v", err)
	}
	if w1, _ := cfgWrites(l); w1 != w0 {
		t.Fatalf("PlanNodes wrote %d times to MAAS: before %v after %v", w1-w0, k0, l.MAAS.Stats().ByKind())
	}
	if len(ps) != 1 || ps[0].Node != n.Name || !ps[0].Found {
		t.Fatalf("plans: %+v", ps)
	}
	return ps[0]
}

// ofPart are the changes of a part, as "op object" strings.
func ofPart(p drivers.MachinePlan, part string) []string {
	var out []string
	for _, c := range p.Changes {
		if c.Part == part {
			out = append(out, c.Op+" "+c.Object)
		}
	}
	slices.Sort(out)
	return out
}

func mustNoChanges(t *testing.T, p drivers.MachinePlan, after string) {
	t.Helper()
	if len(p.Changes) > 0 {
		t.Fatalf("after %s the plan still has changes: %+v", after, p.Changes)
	}
}

// ifaceState is what MAAS holds of a machine's interfaces: their names,
// and their links as "iface cidr".
func ifaceState(t *testing.T, drv *Driver, id string) (names, links []string) {
	t.Helper()
	m := cfgMachine(t, drv, id)
	for _, i := range m.Interfaces {
		names = append(names, i.Name)
		for _, l := range i.Links {
			if l.Subnet != nil {
				links = append(links, i.Name+" "+l.Subnet.CIDR)
			}
		}
	}
	slices.Sort(names)
	slices.Sort(links)
	return names, links
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// plannedIfaces are the planned interface and link objects by op:
// interfaces created and deleted (renames count as both), links created.
func plannedIfaces(p drivers.MachinePlan) (created, deleted, linked []string) {
	for _, c := range p.Changes {
		if c.Part != drivers.PartInterfaces {
			continue
		}
		link, isLink := strings.CutPrefix(c.Object, "link ")
		switch {
		case isLink && c.Op == opCreate:
			linked = append(linked, link)
		case isLink:
		case c.Op == opCreate:
			created = append(created, c.Object)
		case c.Op == opDelete:
			deleted = append(deleted, c.Object)
		case strings.HasPrefix(c.Detail, "name "):
			from, to, _ := strings.Cut(strings.TrimPrefix(strings.Split(c.Detail, ",")[0], "name "), " → ")
			deleted, created = append(deleted, from), append(created, to)
		}
	}
	slices.Sort(created)
	slices.Sort(deleted)
	slices.Sort(linked)
	return created, deleted, linked
}

// TestPlanNodesMatchesApply: on a commissioned machine of the example
// site, the plan of each change kind names exactly the objects the real
// Apply* then changes in MAAS (read back from the lab), and once applied
// a second plan answers no changes. Planning never writes.
func TestPlanNodesMatchesApply(t *testing.T) {
	d := cfgDesign(t)
	l, drv := cfgLab(t, d)
	const name = "r01-cmp01"
	id := cfgCommission(t, l, drv, name)
	cfgSubnets(t, drv, driverspec.Site(d))
	n := driverspec.Node(d, d.Nodes[name], id)
	ctx := t.Context()

	// Networking from the commissioned state: bond, renames, VLAN interface, links.
	p := planOne(t, l, drv, n)
	names0, links0 := ifaceState(t, drv, id)
	if _, err := drv.ApplyNetworking(ctx, n); err != nil {
		t.Fatal(err)
	}
	names1, links1 := ifaceState(t, drv, id)
	created, deleted, linked := plannedIfaces(p)
	if got := minus(names1, names0); !slices.Equal(got, created) || len(created) == 0 {
		t.Errorf("interfaces made %v, planned %v", got, created)
	}
	if got := minus(names0, names1); !slices.Equal(got, deleted) {
		t.Errorf("interfaces gone %v, planned %v", got, deleted)
	}
	if got := minus(links1, links0); !slices.Equal(got, linked) || len(linked) == 0 {
		t.Errorf("links made %v, planned %v", got, linked)
	}
	if p.Deployed != "" || p.Now.MachineID != id || p.Now.State != "Ready" {
		t.Errorf("machine now %+v, deployed %q", p.Now, p.Deployed)
	}

	// Storage: the layout, then nothing.
	if got := ofPart(p, drivers.PartStorage); !slices.Equal(got, []string{"update layout"}) {
		t.Errorf("storage plan %v", got)
	}
	if _, err := drv.ApplyStorage(ctx, n); err != nil {
		t.Fatal(err)
	}
	// Platform: the design's tags and the kernel parameters' tag.
	tags0 := cfgMachine(t, drv, id).TagNames
	if _, err := drv.ApplyPlatform(ctx, n); err != nil {
		t.Fatal(err)
	}
	tags1 := cfgMachine(t, drv, id).TagNames
	var plannedTags []string
	for _, c := range p.Changes {
		if c.Part == drivers.PartTags {
			plannedTags = append(plannedTags, c.Object)
		}
	}
	slices.Sort(plannedTags)
	if got := userTags(minus(tags1, tags0)); !slices.Equal(got, plannedTags) || len(got) == 0 {
		t.Errorf("tags added %v, planned %v", got, plannedTags)
	}
	if got := ofPart(p, drivers.PartKernelOptions); len(got) != 1 || !slices.ContainsFunc(minus(tags1, tags0), isKernelTag) {
		t.Errorf("kernel options planned %v, tags added %v", got, minus(tags1, tags0))
	}
	// The name IdentifyNode gives (the machine enlisted itself).
	if got := ofPart(p, drivers.PartHostname); len(got) == 0 {
		t.Errorf("hostname plan %v", got)
	}
	m, err := drv.fetchMachine(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drv.ensureName(ctx, m, n); err != nil {
		t.Fatal(err)
	}
	mustNoChanges(t, planOne(t, l, drv, n), "applying")

	planDriver = drv
	for _, tc := range planChangeKinds(n) {
		t.Run(tc.name, func(t *testing.T) {
			p := planOne(t, l, drv, tc.node)
			if got := ofPart(p, tc.part); !slices.Equal(got, tc.want) {
				t.Fatalf("%s plan %v, want %v (all: %+v)", tc.part, got, tc.want, p.Changes)
			}
			if len(p.Changes) != len(tc.want)+len(tc.also) {
				t.Errorf("other changes planned: %+v", p.Changes)
			}
			for part, want := range tc.also {
				if got := ofPart(p, part); !slices.Equal(got, want) {
					t.Errorf("%s plan %v, want %v", part, got, want)
				}
			}
			before := cfgMachine(t, drv, id)
			if err := tc.apply(ctx, drv, tc.node); err != nil {
				t.Fatal(err)
			}
			tc.check(t, before, cfgMachine(t, drv, id))
			mustNoChanges(t, planOne(t, l, drv, tc.node), tc.name)
		})
	}
}

// planKind is one change to the node: the part and objects its plan
// names, the step that applies it and what MAAS must hold after.
type planKind struct {
	name  string
	node  drivers.Node
	part  string
	want  []string
	also  map[string][]string // the changes of other parts the row plans
	apply func(context.Context, *Driver, drivers.Node) error
	check func(t *testing.T, before, after mMachine)
}

// planDriver reads MAAS for the table's checks (set by the test).
var planDriver *Driver

// lvFS is the filesystem type of the logical volume vg-root-<lv>, as
// MAAS holds it.
func lvFS(t *testing.T, id, lv string) string {
	t.Helper()
	var vgs []mVolumeGroup
	cfgCall(t, planDriver, http.MethodGet, "nodes/"+id+"/volume-groups/", "", nil, &vgs)
	for _, vg := range vgs {
		for _, b := range vg.LVs {
			if b.Name == vg.Name+"-"+lv && b.FS != nil {
				return b.FS.FSType
			}
		}
	}
	return ""
}

// withoutVLAN is n without the network tagged vid on bond0, and that
// network.
func withoutVLAN(n drivers.Node, vid int) (drivers.Node, drivers.InterfaceNetwork) {
	var gone drivers.InterfaceNetwork
	n.Interfaces = slices.Clone(n.Interfaces)
	for i := range n.Interfaces {
		in := &n.Interfaces[i]
		if in.Name != "bond0" {
			continue
		}
		in.Networks = slices.DeleteFunc(slices.Clone(in.Networks), func(net drivers.InterfaceNetwork) bool {
			if net.VLAN == vid {
				gone = net
			}
			return net.VLAN == vid
		})
	}
	return n, gone
}

// withLVFS is n with the filesystem type of its logical volume lv set.
func withLVFS(n drivers.Node, lv, fstype string) drivers.Node {
	n.Storage.VolumeGroups = slices.Clone(n.Storage.VolumeGroups)
	for i := range n.Storage.VolumeGroups {
		vg := &n.Storage.VolumeGroups[i]
		vg.LogicalVolumes = slices.Clone(vg.LogicalVolumes)
		for k := range vg.LogicalVolumes {
			if l := &vg.LogicalVolumes[k]; l.Name == lv && l.Filesystem != nil {
				fs := *l.Filesystem
				fs.FSType = fstype
				l.Filesystem = &fs
			}
		}
	}
	return n
}

func applied(step func(*Driver, context.Context, drivers.Node) (drivers.Result, error)) func(context.Context, *Driver, drivers.Node) error {
	return func(ctx context.Context, d *Driver, n drivers.Node) error {
		r, err := step(d, ctx, n)
		if err == nil && r.Status != drivers.StatusDone {
			err = fmt.Errorf("%s: %s", r.Status, r.Message)
		}
		return err
	}
}

// planChangeKinds are the changes of the table, each on top of the one
// before (the last puts the node back as designed).
func planChangeKinds(n drivers.Node) []planKind {
	tagged := withTag(n, "plan-gpu")
	kernel := tagged
	kernel.Platform.KernelParams = map[string]string{"console": "ttyS0,9600n8", "quiet": "true"}
	mtu := withBondMTU(kernel, 9216)
	renamed := withHostname(mtu, "r01-cmp01-renamed")
	xfs := withLVFS(renamed, "var", "btrfs")
	untagged, dropped := withoutVLAN(xfs, 30)
	back := withHostname(n, "r01-cmp01-renamed")
	return []planKind{
		{name: "tag", node: tagged, part: drivers.PartTags, want: []string{"create plan-gpu"},
			apply: applied((*Driver).ApplyPlatform), check: func(t *testing.T, b, a mMachine) {
				if got := minus(a.TagNames, b.TagNames); !slices.Equal(got, []string{"plan-gpu"}) {
					t.Errorf("tags added %v", got)
				}
			}},
		{name: "kernel options", node: kernel, part: drivers.PartKernelOptions,
			want:  []string{"update " + kernelTag(kernelOpts(kernel.Platform.KernelParams))},
			apply: applied((*Driver).ApplyPlatform), check: func(t *testing.T, b, a mMachine) {
				if got := minus(a.TagNames, b.TagNames); !slices.Equal(got, []string{kernelTag("console=ttyS0,9600n8 quiet")}) {
					t.Errorf("tags added %v", got)
				}
			}},
		{name: "bond mtu", node: mtu, part: drivers.PartInterfaces, want: []string{"update bond0"},
			apply: applied((*Driver).ApplyNetworking), check: func(t *testing.T, b, a mMachine) {
				if i := ifaceByName(a.Interfaces, "bond0"); i == nil || i.MTU != 9216 || ifaceByName(b.Interfaces, "bond0").MTU == 9216 {
					t.Errorf("bond0 after: %+v", i)
				}
			}},
		{name: "hostname", node: renamed, part: drivers.PartHostname, want: []string{"update "},
			apply: func(ctx context.Context, d *Driver, n drivers.Node) error {
				m, err := d.fetchMachine(ctx, n.MachineID)
				if err == nil {
					_, err = d.ensureName(ctx, m, n)
				}
				return err
			}, check: func(t *testing.T, b, a mMachine) {
				if a.Hostname != "r01-cmp01-renamed" || b.Hostname == a.Hostname {
					t.Errorf("hostname %s → %s", b.Hostname, a.Hostname)
				}
			}},
		{name: "filesystem", node: xfs, part: drivers.PartStorage, want: []string{"update layout"},
			apply: applied((*Driver).ApplyStorage), check: func(t *testing.T, b, a mMachine) {
				if lvFS(t, a.SystemID, "var") != "btrfs" {
					t.Errorf("/var is not btrfs in MAAS")
				}
			}},
		{name: "tagged network dropped", node: untagged, part: drivers.PartInterfaces, want: []string{"delete bond0.30"},
			apply: applied((*Driver).ApplyNetworking), check: func(t *testing.T, b, a mMachine) {
				if ifaceByName(b.Interfaces, "bond0.30") == nil || ifaceByName(a.Interfaces, "bond0.30") != nil {
					t.Errorf("bond0.30 not removed: %v", a.Interfaces)
				}
			}},
		{name: "back as designed", node: back, part: drivers.PartInterfaces,
			want: []string{"create bond0.30", "create link bond0.30 " + dropped.CIDR, "update bond0"},
			also: map[string][]string{drivers.PartKernelOptions: {"update " + kernelTag(kernelOpts(n.Platform.KernelParams))},
				drivers.PartStorage: {"update layout"}},
			apply: func(ctx context.Context, d *Driver, n drivers.Node) error {
				for _, step := range []func(*Driver, context.Context, drivers.Node) (drivers.Result, error){
					(*Driver).ApplyNetworking, (*Driver).ApplyStorage, (*Driver).ApplyPlatform} {
					if err := applied(step)(ctx, d, n); err != nil {
						return err
					}
				}
				return nil
			}, check: func(t *testing.T, b, a mMachine) {
				if v := ifaceByName(a.Interfaces, "bond0.30"); v == nil || !slices.ContainsFunc(v.Links, func(l mLink) bool {
					return l.Subnet != nil && l.Subnet.CIDR == dropped.CIDR
				}) {
					t.Errorf("bond0.30 and its link to %s not made again: %+v", dropped.CIDR, v)
				}
				if lvFS(t, a.SystemID, "var") == "btrfs" {
					t.Errorf("/var is still btrfs in MAAS")
				}
				if i := ifaceByName(a.Interfaces, "bond0"); i == nil || i.MTU != 9000 {
					t.Errorf("bond0 after: %+v", i)
				}
				if got := minus(b.TagNames, a.TagNames); !slices.Equal(got, []string{kernelTag("console=ttyS0,9600n8 quiet")}) {
					t.Errorf("tags removed %v", got)
				}
			}},
	}
}

func withTag(n drivers.Node, tag string) drivers.Node {
	n.Tags = append(slices.Clone(n.Tags), tag)
	return n
}

func withHostname(n drivers.Node, h string) drivers.Node {
	n.Hostname = h
	return n
}

// withBondMTU is n with the MTU of bond0's link set.
func withBondMTU(n drivers.Node, mtu int) drivers.Node {
	n.Interfaces = slices.Clone(n.Interfaces)
	for i := range n.Interfaces {
		if n.Interfaces[i].Name == "bond0" {
			n.Interfaces[i].Link.MTU = mtu
		}
	}
	return n
}

// TestPlanNodesUnknownAndBatched: a node without a machine, or whose
// machine MAAS does not know, is not found; more nodes than a batch are
// read in ceil(n/planBatch) machine reads, the plans in the nodes' order.
func TestPlanNodesUnknownAndBatched(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{})
	const count = planBatch*2 + 1
	nodes := []drivers.Node{{NodeRef: drivers.NodeRef{Name: "none"}}, {NodeRef: drivers.NodeRef{Name: "gone", MachineID: "xyz123"}}}
	for i := range count {
		hw := &simmaas.Hardware{Arch: "amd64/generic", NICs: []simmaas.NIC{{MAC: fmt.Sprintf("02:20:00:00:%02x:%02x", i>>8, i&0xff)}}}
		id := l.MAAS.Enlist(hw, "ipmi", simmaas.PowerParams{"power_address": fmt.Sprintf("127.0.1.%d", i%250+1)})
		nodes = append(nodes, drivers.Node{NodeRef: drivers.NodeRef{Name: fmt.Sprintf("n%04d", i), MachineID: id}})
	}
	d := newTestDriver(t, l, map[string]string{SettingCacheTTL: "0s"})
	before := machineReads(l)
	w0, _ := cfgWrites(l)
	ps, err := d.PlanNodes(testCtx(t), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if w1, _ := cfgWrites(l); w1 != w0 {
		t.Errorf("PlanNodes wrote %d times", w1-w0)
	}
	if got, want := machineReads(l)-before, (count+planBatch-1)/planBatch; got != want {
		t.Errorf("%d machine reads for %d machines, want %d", got, count, want)
	}
	if len(ps) != len(nodes) {
		t.Fatalf("%d plans for %d nodes", len(ps), len(nodes))
	}
	for i, p := range ps {
		if p.Node != nodes[i].Name || p.Found != (i >= 2) || (p.Found && p.Now.MachineID != nodes[i].MachineID) {
			t.Fatalf("plan %d: %+v for node %+v", i, p, nodes[i].NodeRef)
		}
		if p.Found && (p.Now.State != "New" || len(p.Changes) != 0) {
			t.Fatalf("plan %d of a New machine: %+v", i, p)
		}
	}
	if ps, err := d.PlanNodes(testCtx(t), nil); err != nil || len(ps) != 0 {
		t.Errorf("no nodes: %v %v", ps, err)
	}
}

// machineReads counts the lab's GET machines/ requests.
func machineReads(l *lab.Lab) int {
	n := 0
	for _, r := range l.MAAS.Stats().Snapshot().Requests {
		if strings.HasPrefix(r.Request, "GET ") && strings.Contains(r.Request, "/machines/") && !strings.Contains(r.Request, "op=") &&
			strings.Count(strings.TrimSuffix(r.Request[strings.Index(r.Request, "/machines/"):], "/"), "/") == 1 {
			n += r.Count
		}
	}
	return n
}

// TestPlanSiteMatchesPrepare: on a fresh region the site plan names the
// fabrics, VLANs, subnets and ranges PrepareSite then makes (read back
// from MAAS), writing nothing; after PrepareSite it plans nothing.
func TestPlanSiteMatchesPrepare(t *testing.T) {
	d := cfgDesign(t)
	l, drv := cfgLab(t, d)
	site := driverspec.Site(d)
	ctx := t.Context()
	w0, _ := cfgWrites(l)
	plan, err := drv.PlanSite(ctx, site)
	if err != nil {
		t.Fatal(err)
	}
	if w1, _ := cfgWrites(l); w1 != w0 {
		t.Fatalf("PlanSite wrote %d times", w1-w0)
	}
	before := siteObjects(t, drv)
	cfgSubnets(t, drv, site)
	after := siteObjects(t, drv)
	for _, part := range []string{drivers.PartFabric, drivers.PartSubnet, drivers.PartRange} {
		var planned []string
		for _, c := range plan {
			if c.Part == part && c.Op == opCreate {
				planned = append(planned, strings.TrimPrefix(c.Object, "subnet "))
			}
		}
		slices.Sort(planned)
		if got := minus(after[part], before[part]); !slices.Equal(got, planned) || len(got) == 0 {
			t.Errorf("%s: made %v, planned %v", part, got, planned)
		}
	}
	if !slices.ContainsFunc(plan, func(c drivers.PlannedChange) bool {
		return c.Part == drivers.PartVLAN && strings.Contains(c.Detail, "DHCP off → on")
	}) {
		t.Errorf("DHCP on the PXE VLAN not planned: %+v", plan)
	}
	again, err := drv.PlanSite(ctx, site)
	if err != nil || len(again) != 0 {
		t.Errorf("after PrepareSite: %+v %v", again, err)
	}
}

// siteObjects are MAAS's fabrics (names), subnets (CIDRs) and IP ranges
// (start-end), by part.
func siteObjects(t *testing.T, drv *Driver) map[string][]string {
	var fabrics []mFabric
	var subnets []mSubnet
	var ranges []mIPRange
	cfgCall(t, drv, http.MethodGet, "fabrics/", "", nil, &fabrics)
	cfgCall(t, drv, http.MethodGet, "subnets/", "", nil, &subnets)
	cfgCall(t, drv, http.MethodGet, "ipranges/", "", url.Values{}, &ranges)
	out := map[string][]string{}
	for _, f := range fabrics {
		out[drivers.PartFabric] = append(out[drivers.PartFabric], f.Name)
	}
	for _, s := range subnets {
		out[drivers.PartSubnet] = append(out[drivers.PartSubnet], s.CIDR)
	}
	for _, r := range ranges {
		out[drivers.PartRange] = append(out[drivers.PartRange], r.StartIP+"-"+r.EndIP)
	}
	return out
}

// TestPlanNodesDeployed: a deployed machine answers its image; a node
// asking for another image or kernel plans a change of image; an
// interface change is still reported though MAAS refuses it now (the
// engine makes it a reason to redeploy); the ownership marker removed
// behind the driver's back is planned and, repaired, planned no more.
func TestPlanNodesDeployed(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	d := cfgDesign(t)
	l, drv := cfgLab(t, d)
	const name = "r01-cmp01"
	id := cfgCommission(t, l, drv, name)
	cfgSubnets(t, drv, driverspec.Site(d))
	n := driverspec.Node(d, d.Nodes[name], id)
	ctx := t.Context()
	m, err := drv.fetchMachine(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drv.ensureName(ctx, m, n); err != nil {
		t.Fatal(err)
	}
	for _, step := range []func(*Driver, context.Context, drivers.Node) (drivers.Result, error){
		(*Driver).ApplyNetworking, (*Driver).ApplyStorage, (*Driver).ApplyPlatform} {
		if err := applied(step)(ctx, drv, n); err != nil {
			t.Fatal(err)
		}
	}
	mustDone(t, "Deploy", func(ctx context.Context) (drivers.Result, error) { return drv.Deploy(ctx, n, drivers.Deployment{}) })

	p := planOne(t, l, drv, n)
	mustNoChanges(t, p, "deploying")
	if p.Now.State != "Deployed" || p.Deployed != "ubuntu/jammy ga-22.04" {
		t.Fatalf("deployed %q, machine %+v", p.Deployed, p.Now)
	}

	other := n
	other.Platform.Image, other.Platform.Kernel = "ubuntu/noble", "hwe-24.04"
	if got := ofPart(planOne(t, l, drv, other), drivers.PartImage); !slices.Equal(got, []string{"update image", "update kernel"}) {
		t.Errorf("image plan %v", got)
	}

	mtu := withBondMTU(n, 9216)
	if got := ofPart(planOne(t, l, drv, mtu), drivers.PartInterfaces); !slices.Equal(got, []string{"update bond0"}) {
		t.Errorf("interfaces plan on a deployed machine %v", got)
	}
	if _, err := drv.ApplyNetworking(ctx, mtu); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("ApplyNetworking on a deployed machine: %v", err)
	}

	// The marker removed behind the driver's back (another client).
	cfgCall(t, newTestDriver(t, l, nil), http.MethodPost, "machines/"+id+"/", "set_owner_data", url.Values{OwnerDataNode: {""}}, nil)
	if got := ofPart(planOne(t, l, drv, n), drivers.PartOwner); !slices.Equal(got, []string{"create " + OwnerDataNode}) {
		t.Errorf("owner plan %v", got)
	}
	if r, err := drv.RepairMachine(ctx, n, []string{RepairOwner}); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("repair: %+v %v", r, err)
	}
	if got := cfgMachine(t, drv, id).OwnerData[OwnerDataNode]; got != name {
		t.Errorf("owner data after the repair: %q", got)
	}
	mustNoChanges(t, planOne(t, l, drv, n), "the repair")

	// A design owner data key changed: planned, set at the next deployment only.
	more := n
	more.OwnerData = map[string]string{"rack": "r01"}
	p = planOne(t, l, drv, more)
	if got := ofPart(p, drivers.PartOwner); !slices.Equal(got, []string{"create rack"}) || !strings.Contains(p.Changes[0].Detail, "next deployed") {
		t.Errorf("owner plan %v: %+v", got, p.Changes)
	}
}

// TestPlanReadsBypassTheCache: a plan's machine reads do not go into the
// read cache. The steps take the cache's machines as shallow copies and
// change their interfaces in place (replaceIface): a plan's machine
// there would share its interfaces with a step configuring the machine
// while the plan's workers read them.
func TestPlanReadsBypassTheCache(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 1})
	m := l.Machines()[0]
	d := newTestDriver(t, l, nil)
	id := l.MAAS.Enlist(&m.Hardware, "manual", nil)
	if _, ok := d.c.cache.machine(id, 0); ok {
		t.Fatal("the machine is cached before any read")
	}
	ps, err := d.PlanNodes(testCtx(t), []drivers.Node{{NodeRef: drivers.NodeRef{Name: m.Name, MachineID: id}}})
	if err != nil || len(ps) != 1 || !ps[0].Found {
		t.Fatalf("%+v %v", ps, err)
	}
	if _, ok := d.c.cache.machine(id, 0); ok {
		t.Error("the plan's machine read went into the read cache")
	}
}

// TestPlanSiteUpdates: on a prepared region, a site changed in each
// kind of object plans exactly those updates and creations (as "part op
// object"); PrepareSite then makes them (read back from MAAS) and the
// site plans nothing more.
func TestPlanSiteUpdates(t *testing.T) {
	d := cfgDesign(t)
	l, drv := cfgLab(t, d)
	site := driverspec.Site(d)
	ctx := t.Context()
	cfgSubnets(t, drv, site)
	site = changedSite(site)
	w0, _ := cfgWrites(l)
	plan, err := drv.PlanSite(ctx, site)
	if err != nil {
		t.Fatal(err)
	}
	if w1, _ := cfgWrites(l); w1 != w0 {
		t.Fatalf("PlanSite wrote %d times", w1-w0)
	}
	var got []string
	for _, c := range plan {
		got = append(got, c.Part+" "+c.Op+" "+c.Object)
	}
	slices.Sort(got)
	want := []string{"range update 10.14.0.64-10.14.0.250", "route update storage → 10.113.0.0/24 via 10.13.0.254",
		"ssh-key create plan@example", "subnet create subnet 10.15.0.0/24", "subnet update subnet 10.12.0.0/24",
		"vlan create VLAN 50 of fabric data-bond", "vlan update VLAN 30 of fabric data-bond"}
	if !slices.Equal(got, want) {
		t.Fatalf("site plan\n%q\nwant\n%q", got, want)
	}
	cfgSubnets(t, drv, site)
	checkChangedSite(t, drv)
	if again, err := drv.PlanSite(ctx, site); err != nil || len(again) != 0 {
		t.Errorf("after PrepareSite: %+v %v", again, err)
	}
}

// changedSite is the example site with a subnet's gateway and DNS, a
// VLAN's MTU, a route's metric and a range's type changed, a new tagged
// network on the bond's link, and a new SSH key.
func changedSite(site drivers.SiteSpec) drivers.SiteSpec {
	site.Subnets = slices.Clone(site.Subnets)
	for i := range site.Subnets {
		sn := &site.Subnets[i]
		switch sn.Name {
		case "mgmt":
			sn.Gateway, sn.DNSServers = "10.12.0.254", []string{"10.12.0.53"}
		case "storage":
			sn.MTU = 9100
			sn.Routes = slices.Clone(sn.Routes)
			sn.Routes[0].Metric = 50
		case "public":
			sn.Ranges = slices.Clone(sn.Ranges)
			sn.Ranges[2].Type = "dhcp"
		}
	}
	site.Subnets = append(site.Subnets, drivers.Subnet{Name: "extra", CIDR: "10.15.0.0/24", VLAN: 50, MTU: 1500, Gateway: "10.15.0.1"})
	site.Links = slices.Clone(site.Links)
	for i := range site.Links {
		if site.Links[i].Name == "data-bond" {
			site.Links[i].Networks = append(slices.Clone(site.Links[i].Networks), "extra")
		}
	}
	site.SSHKeys = append(slices.Clone(site.SSHKeys), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPlanPlanPlanPlanPlanPlanPlanPlanPlanPlanPlan plan@example")
	return site
}

// checkChangedSite reads back from MAAS what changedSite asks for.
func checkChangedSite(t *testing.T, drv *Driver) {
	t.Helper()
	var subnets []mSubnet
	cfgCall(t, drv, http.MethodGet, "subnets/", "", nil, &subnets)
	byCIDR := map[string]mSubnet{}
	for _, s := range subnets {
		byCIDR[s.CIDR] = s
	}
	if s := byCIDR["10.12.0.0/24"]; str(s.GatewayIP) != "10.12.0.254" || !slices.Equal(s.DNS, []string{"10.12.0.53"}) {
		t.Errorf("mgmt in MAAS: gateway %s DNS %v", str(s.GatewayIP), s.DNS)
	}
	if s := byCIDR["10.13.0.0/24"]; s.VLAN == nil || s.VLAN.MTU != 9100 {
		t.Errorf("storage's VLAN in MAAS: %+v", s.VLAN)
	}
	if s, ok := byCIDR["10.15.0.0/24"]; !ok || s.VLAN == nil || s.VLAN.VID != 50 {
		t.Errorf("extra in MAAS: %+v", s)
	}
	var routes []mStaticRoute
	cfgCall(t, drv, http.MethodGet, "static-routes/", "", nil, &routes)
	if !slices.ContainsFunc(routes, func(r mStaticRoute) bool { return r.GatewayIP == "10.13.0.254" && r.Metric == 50 }) {
		t.Errorf("storage's route in MAAS: %+v", routes)
	}
	var ranges []mIPRange
	cfgCall(t, drv, http.MethodGet, "ipranges/", "", nil, &ranges)
	if !slices.ContainsFunc(ranges, func(r mIPRange) bool { return r.StartIP == "10.14.0.64" && r.Type == "dynamic" }) {
		t.Errorf("public's range in MAAS: %+v", ranges)
	}
	var keys []mSSHKey
	cfgCall(t, drv, http.MethodGet, "account/prefs/sshkeys/", "", nil, &keys)
	if !slices.ContainsFunc(keys, func(k mSSHKey) bool { return strings.Contains(k.Key, "plan@example") }) {
		t.Errorf("SSH keys in MAAS: %d, none the new one", len(keys))
	}
}

// TestPlanRoCE: on a fresh commissioned machine, a RoCE point-to-point
// address plans its subnet (made on the bond's VLAN, which the plan
// makes up) and its link on the bond the plan makes up too; applying
// makes that subnet and link in MAAS, and nothing more is planned.
func TestPlanRoCE(t *testing.T) {
	d := cfgDesign(t)
	l, drv := cfgLab(t, d)
	const name = "r01-cmp01"
	id := cfgCommission(t, l, drv, name)
	cfgSubnets(t, drv, driverspec.Site(d))
	n := driverspec.Node(d, d.Nodes[name], id)
	if err := driverspec.AddRoCE(&n, d.Nodes[name].Spec.Hardware, []driverspec.RoCEAddress{{Interface: "bond0", CIDR: "10.250.0.1/31"}}); err != nil {
		t.Fatal(err)
	}
	p := planOne(t, l, drv, n)
	if got := ofPart(p, drivers.PartSubnet); !slices.Equal(got, []string{"create subnet 10.250.0.0/31"}) {
		t.Errorf("subnet plan %v", got)
	}
	if _, _, linked := plannedIfaces(p); !slices.Contains(linked, "bond0 10.250.0.0/31") {
		t.Errorf("links planned %v", linked)
	}
	if err := applied((*Driver).ApplyNetworking)(t.Context(), drv, n); err != nil {
		t.Fatal(err)
	}
	if _, links := ifaceState(t, drv, id); !slices.Contains(links, "bond0 10.250.0.0/31") {
		t.Errorf("links in MAAS %v", links)
	}
	if got := ofPart(planOne(t, l, drv, n), drivers.PartInterfaces); len(got) != 0 {
		t.Errorf("after applying: %v", got)
	}
}
