package maas

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

func TestConfigureAgainstLab(t *testing.T) {
	d := cfgDesign(t)
	l, drv := cfgLab(t, d)
	const name = "r01-cmp01"
	id := cfgCommission(t, l, drv, name)
	cfgSubnets(t, drv, driverspec.Site(d))
	n := driverspec.Node(d, d.Nodes[name], id)
	ctx := t.Context()

	steps := []struct {
		name string
		fn   func() (drivers.Result, error)
	}{
		{"networking", func() (drivers.Result, error) { return drv.ApplyNetworking(ctx, n) }},
		{"storage", func() (drivers.Result, error) { return drv.ApplyStorage(ctx, n) }},
		{"platform", func() (drivers.Result, error) { return drv.ApplyPlatform(ctx, n) }},
	}
	for _, st := range steps {
		w0, t0 := cfgWrites(l)
		r, err := st.fn()
		if err != nil || r.Status != drivers.StatusDone || strings.Contains(r.Message, "already configured") {
			t.Fatalf("%s: %+v %v", st.name, r, err)
		}
		w1, t1 := cfgWrites(l)
		t.Logf("%s first run: %d requests (%d writes): %s", st.name, t1-t0, w1-w0, r.Message)
		r, err = st.fn()
		if err != nil || r.Status != drivers.StatusDone || !strings.Contains(r.Message, "already configured") {
			t.Fatalf("%s again: %+v %v", st.name, r, err)
		}
		w2, t2 := cfgWrites(l)
		t.Logf("%s second run: %d requests (%d writes)", st.name, t2-t1, w2-w1)
		if w2 != w1 {
			t.Errorf("%s second run wrote %d times", st.name, w2-w1)
		}
	}

	m := cfgMachine(t, drv, id)
	// The bond over the two PCI NICs, renamed pxe NIC, VLAN interface, addresses.
	hw := l.Machine(name).Hardware
	macs := map[string]bool{}
	for _, nic := range hw.NICs {
		macs[strings.ToLower(nic.MAC)] = true
	}
	var bond, pxe, vlan *mInterface
	for i := range m.Interfaces {
		switch in := &m.Interfaces[i]; {
		case in.Name == "bond0" && in.Type == "bond":
			bond = in
		case in.Name == "pxe" && in.Type == "physical":
			pxe = in
		case in.Type == "vlan" && in.VLAN != nil && in.VLAN.VID == 30:
			vlan = in
		}
	}
	if bond == nil || pxe == nil || vlan == nil {
		t.Fatalf("interfaces: %+v", m.Interfaces)
	}
	if len(bond.Parents) != 2 || bond.MTU != 9000 {
		t.Errorf("bond0: parents %v mtu %d", bond.Parents, bond.MTU)
	}
	for _, p := range bond.Parents {
		i := slices.IndexFunc(m.Interfaces, func(x mInterface) bool { return x.Name == p })
		if i < 0 || !macs[strings.ToLower(m.Interfaces[i].MAC)] || m.Interfaces[i].Type != "physical" {
			t.Errorf("bond parent %s is not one of the design's NICs", p)
		}
	}
	hasLink := func(i *mInterface, mode, ip string) bool {
		return slices.ContainsFunc(i.Links, func(l mLink) bool { return strings.EqualFold(l.Mode, mode) && l.IP == ip })
	}
	if !hasLink(bond, "static", "10.12.0.101") || !hasLink(vlan, "static", "10.13.0.101") || !hasLink(pxe, "dhcp", "") {
		t.Errorf("links: bond %+v vlan %+v pxe %+v", bond.Links, vlan.Links, pxe.Links)
	}
	if m.Gateways.IPv4.LinkID == nil || !slices.ContainsFunc(bond.Links, func(l mLink) bool { return l.ID == *m.Gateways.IPv4.LinkID }) {
		t.Errorf("default gateway link %v is not on bond0", m.Gateways.IPv4.LinkID)
	}

	// Storage: /boot/efi and /boot partitions, vg-root with its LVs.
	mounts := map[string]string{}
	for _, b := range m.BlockDevices {
		if b.FS != nil && b.FS.MountPoint != nil {
			mounts[*b.FS.MountPoint] = b.Name
		}
		for _, p := range b.Partitions {
			if p.FS != nil && p.FS.MountPoint != nil {
				mounts[*p.FS.MountPoint] = b.Name
			}
		}
	}
	for mp, dev := range map[string]string{"/": "vg-root-root", "/var": "vg-root-var", "/var/log": "vg-root-log", "/tmp": "vg-root-tmp"} {
		if mounts[mp] != dev {
			t.Errorf("mount %s on %q, want %s (mounts %v)", mp, mounts[mp], dev, mounts)
		}
	}
	if mounts["/boot/efi"] == "" || mounts["/boot/efi"] != mounts["/boot"] {
		t.Errorf("/boot/efi and /boot: %v", mounts)
	}
	var vgs []mVolumeGroup
	cfgCall(t, drv, http.MethodGet, "nodes/"+id+"/volume-groups/", "", nil, &vgs)
	if len(vgs) != 1 || vgs[0].Name != "vg-root" || len(vgs[0].LVs) != 4 {
		t.Errorf("volume groups: %+v", vgs)
	}

	// Platform: tags and the kernel tag; no owner data before allocation.
	for _, tag := range append(slices.Clone(n.Tags), kernelTag(kernelOpts(n.Platform.KernelParams))) {
		if !slices.Contains(m.TagNames, tag) {
			t.Errorf("tags %v lack %s", m.TagNames, tag)
		}
	}
	var kt mTag
	cfgCall(t, drv, http.MethodGet, "tags/"+kernelTag(kernelOpts(n.Platform.KernelParams))+"/", "", nil, &kt)
	if kt.KernelOpts != kernelOpts(n.Platform.KernelParams) || !strings.Contains(kt.KernelOpts, "console=ttyS1,115200n8") {
		t.Errorf("kernel opts %q", kt.KernelOpts)
	}
	for k := range n.OwnerData { // set by Deploy, after allocation (MAAS clears it on release)
		if _, ok := m.OwnerData[k]; ok {
			t.Errorf("owner data %s set on a Ready machine", k)
		}
	}

	// A deployed machine refuses.
	cfgCall(t, drv, http.MethodPost, "machines/"+id+"/", "deploy", url.Values{"distro_series": {"jammy"}}, nil)
	cfgWait(t, "Deployed", func() bool { return cfgMachine(t, drv, id).StatusName == "Deployed" })
	for _, st := range steps {
		r, err := st.fn()
		if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "Deployed") {
			t.Errorf("%s on a deployed machine: %+v %v", st.name, r, err)
		}
	}
}

func TestKernelOpts(t *testing.T) {
	got := kernelOpts(map[string]string{"nomodeset": "true", "iommu": "pt", "console": "ttyS1,115200n8"})
	if got != "console=ttyS1,115200n8 iommu=pt nomodeset" {
		t.Errorf("kernelOpts = %q", got)
	}
}

// The Dell profile's boot disk is SCSI (2:0.0.0), absent from the node
// devices: it resolves through the lshw data of op=details.
func TestConfigureSCSIBootDiskThroughDetails(t *testing.T) {
	d := cfgDesign(t)
	l, drv := cfgLab(t, d)
	const name = "r01-gpu01"
	id := cfgCommission(t, l, drv, name)
	cfgSubnets(t, drv, driverspec.Site(d))
	n := driverspec.Node(d, d.Nodes[name], id)
	for _, fn := range []func() (drivers.Result, error){
		func() (drivers.Result, error) { return drv.ApplyNetworking(t.Context(), n) },
		func() (drivers.Result, error) { return drv.ApplyStorage(t.Context(), n) },
		func() (drivers.Result, error) { return drv.ApplyPlatform(t.Context(), n) },
	} {
		if r, err := fn(); err != nil || r.Status != drivers.StatusDone {
			t.Fatalf("%+v %v", r, err)
		}
		if r, err := fn(); err != nil || !strings.Contains(r.Message, "already configured") {
			t.Fatalf("again: %+v %v", r, err)
		}
	}
	m := cfgMachine(t, drv, id)
	mounts := map[string]string{}
	for _, b := range m.BlockDevices {
		for _, p := range b.Partitions {
			if p.FS != nil && p.FS.MountPoint != nil {
				mounts[*p.FS.MountPoint] = b.Name
			}
		}
	}
	if mounts["/boot/efi"] != "sda" || !strings.HasPrefix(mounts["/var/lib/data"], "nvme") {
		t.Errorf("mounts %v", mounts)
	}
	var kt mTag
	cfgCall(t, drv, http.MethodGet, "tags/"+kernelTag(kernelOpts(n.Platform.KernelParams))+"/", "", nil, &kt)
	if !strings.Contains(kt.KernelOpts, " nomodeset") || !strings.Contains(kt.KernelOpts, "intel_iommu=on") {
		t.Errorf("kernel opts %q", kt.KernelOpts)
	}
}

// TestStorageAfterRestoreBehindOurBack: the machine's default
// configuration restored in MAAS by someone else (new block device IDs)
// after the driver read its node devices: storage is applied again to the
// new disks instead of failing "no disk for device" from the cached IDs.
func TestStorageAfterRestoreBehindOurBack(t *testing.T) {
	d := cfgDesign(t)
	l, drv := cfgLab(t, d)
	const name = "r01-cmp01"
	id := cfgCommission(t, l, drv, name)
	n := driverspec.Node(d, d.Nodes[name], id)
	ctx := t.Context()
	if r, err := drv.ApplyStorage(ctx, n); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("storage: %+v %v", r, err)
	}
	other := newTestDriver(t, l, nil) // another MAAS client: this driver's cache does not see its write
	if _, err := other.machineOp(ctx, id, "restore_default_configuration", nil); err != nil {
		t.Fatal(err)
	}
	r, err := drv.ApplyStorage(ctx, n)
	if err != nil || r.Status != drivers.StatusDone || strings.Contains(r.Message, "already configured") {
		t.Fatalf("storage after a restore behind the driver's back: %+v %v", r, err)
	}
	if r, err := drv.ApplyStorage(ctx, n); err != nil || !strings.Contains(r.Message, "already configured") {
		t.Errorf("storage again: %+v %v", r, err)
	}
}
