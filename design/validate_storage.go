package design

import "fmt"

// sizeGroup accumulates the sizes of one device or volume group.
type sizeGroup struct {
	percent float64
	atLeast int
}

func (v *validator) size(kind, name string, pos Pos, what, s string, g *sizeGroup, owner string) {
	if s == "" {
		return // missing size is reported by the required-field check
	}
	sz, err := ParseSize(s)
	if err != nil {
		v.r.errorf(RuleStorage, kind, name, pos, "%s: %v", what, err)
		return
	}
	if sz.Percent > 0 {
		g.percent += sz.Percent
		if g.percent > 100 {
			v.r.errorf(RuleStorage, kind, name, pos, "%s: percentages on %s add up to %g%%, more than 100%%", what, owner, g.percent)
		}
	}
	if sz.AtLeast {
		g.atLeast++
		if g.atLeast > 1 {
			v.r.errorf(RuleStorage, kind, name, pos, "%s: %s has more than one '>' size; only one may take the rest", what, owner)
		}
	}
}

func (v *validator) storage(kind, name string, st *Storage, hw *HardwareProfileSpec, whole bool) {
	c := &storageCheck{v: v, kind: kind, name: name, st: st, mounts: map[string]Pos{}, pvs: map[string]bool{}}
	for _, dn := range sortedNames(st.Devices) {
		c.device(dn, hw)
	}
	for _, vn := range sortedNames(st.VolumeGroups) {
		vg := st.VolumeGroups[vn]
		where := "storage.volumeGroups." + vn
		if whole && !c.pvs[vn] {
			v.r.errorf(RuleStorage, kind, name, vg.Pos, "%s has no physical volume: no device or partition names it", where)
		}
		g := &sizeGroup{}
		for _, ln := range sortedNames(vg.LogicalVolumes) {
			lv := vg.LogicalVolumes[ln]
			lw := where + ".logicalVolumes." + ln
			v.size(kind, name, lv.SizePos, lw, lv.Size, g, "volume group "+vn)
			c.mount(lv.Filesystem, lv.Pos, lw)
		}
	}
	if whole && c.roots != 1 {
		v.r.errorf(RuleStorage, kind, name, v.d.Nodes[name].Metadata.Pos, "%s", rootProblem(c.roots))
	}
}

// storageCheck is one storage block being checked: the mountpoints seen
// (and how many are /), and the volume groups something names as its
// physical volume.
type storageCheck struct {
	v          *validator
	kind, name string
	st         *Storage
	mounts     map[string]Pos
	roots      int
	pvs        map[string]bool
}

// device checks storage device dn: its alias in the profile, partitions or
// a volume group (not both), and each partition's size and use.
func (c *storageCheck) device(dn string, hw *HardwareProfileSpec) {
	v, kind, name := c.v, c.kind, c.name
	dev := c.st.Devices[dn]
	where := "storage.devices." + dn
	v.device(kind, name, dev.Pos, where, dn, hw)
	if len(dev.Partitions) > 0 && dev.VolumeGroup != "" {
		v.r.errorf(RuleStorage, kind, name, dev.Pos, "%s has both partitions and a volumeGroup; use one", where)
	}
	if dev.VolumeGroup != "" {
		c.vgRef(dev.Pos, where, dev.VolumeGroup)
	}
	g := &sizeGroup{}
	for _, pn := range sortedNames(dev.Partitions) {
		p := dev.Partitions[pn]
		pw := where + ".partitions." + pn
		v.size(kind, name, p.SizePos, pw, p.Size, g, "device "+dn)
		if p.Filesystem != nil && p.VolumeGroup != "" {
			v.r.errorf(RuleStorage, kind, name, p.Pos, "%s has both a filesystem and a volumeGroup; use one", pw)
		}
		if p.VolumeGroup != "" {
			c.vgRef(p.Pos, pw, p.VolumeGroup)
		}
		c.mount(p.Filesystem, p.Pos, pw)
	}
}

// mount checks a filesystem's mountpoint: absolute (or none), used once.
func (c *storageCheck) mount(fs *Filesystem, pos Pos, what string) {
	if fs == nil || fs.Mountpoint == "" {
		return
	}
	if fs.Pos.IsSet() {
		pos = fs.Pos
	}
	mp := fs.Mountpoint
	if mp[0] != '/' && mp != "none" {
		c.v.r.errorf(RuleStorage, c.kind, c.name, pos, "%s: mountpoint %q must be an absolute path", what, mp)
	}
	if first, dup := c.mounts[mp]; dup {
		c.v.r.errorf(RuleStorage, c.kind, c.name, pos, "%s: mountpoint %s is already used at %s", what, mp, first)
	}
	c.mounts[mp] = pos
	if mp == "/" {
		c.roots++
	}
}

// vgRef records vg as having a physical volume and checks it is defined.
func (c *storageCheck) vgRef(pos Pos, what, vg string) {
	c.pvs[vg] = true
	if _, ok := c.st.VolumeGroups[vg]; !ok {
		c.v.r.errorf(RuleReference, c.kind, c.name, pos, "%s: volumeGroup %q is not defined under storage.volumeGroups", what, vg)
	}
}

func rootProblem(n int) string {
	if n == 0 {
		return "storage has no filesystem mounted at /; mount one partition or logical volume at /"
	}
	return fmt.Sprintf("storage mounts %d filesystems at /; exactly one is allowed", n)
}
