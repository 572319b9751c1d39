package design

import (
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// RuleBaseline checks a HardwareProfile's baseline: firmware entries
// (component, version, image, devices of the right bus, one entry per
// component and device), RAID volumes (names, member drives of bus bay,
// member counts per level, sizes, one boot volume), virtual media (an
// http(s) ISO URL), and an OOB type that can apply them.
const RuleBaseline = "baseline"

// Bounds of a hardware profile's baseline.
const (
	MaxFirmwareEntries    = 64
	MaxFirmwareDevices    = 64
	MaxFirmwareVersionLen = 64
	MaxImageURLLen        = 2048
	MaxImageFileLen       = 255
	MaxRAIDVolumes        = 16
	MaxRAIDDrives         = 32
	MaxBaselineParallel   = 1024
)

var (
	sha256RE         = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	raidVolumeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)
	bayAddressRE     = regexp.MustCompile(`^(0|[1-9][0-9]{0,3})$`) // as a BMC writes a bay: no leading zero
)

// firmwareBuses are the device alias buses a firmware component's
// devices may name, as a BMC's firmware inventory reports the devices
// (a drive by its bay, an NVMe drive by its PCI address; a scsi address
// is the operating system's, which no BMC reports); a component without
// buses names no device.
var firmwareBuses = map[string][]string{
	"nic": {"pci"}, "gpu": {"pci"}, "drive": {"bay", "nvme"}, "bmc": nil, "bios": nil,
}

// raidMembers are the member counts each RAID level accepts.
var raidMembers = map[string]struct {
	min   int
	exact bool // exactly min
	even  bool
	say   string
}{
	"raid0":  {1, false, false, "at least 1"},
	"raid1":  {2, true, false, "exactly 2"},
	"raid5":  {3, false, false, "at least 3"},
	"raid6":  {4, false, false, "at least 4"},
	"raid10": {4, false, true, "an even number, at least 4"},
}

// baselineReport reports a problem of a profile's baseline at pos.
type baselineReport func(pos Pos, format string, args ...any)

// baseline checks a hardware profile's baseline (firmware, raid,
// virtualMedia, and whether its OOB type can apply them with bios) and
// its bay aliases.
func (v *validator) baseline(h *HardwareProfile) {
	name, s := h.Metadata.Name, &h.Spec
	bad := func(pos Pos, format string, args ...any) {
		v.r.errorf(RuleBaseline, KindHardwareProfile, name, orPos(pos, h.Metadata.Pos), format, args...)
	}
	for _, alias := range sortedNames(s.DeviceAliases) {
		if da := s.DeviceAliases[alias]; da.Bus == "bay" && da.Address != "" && !bayAddressRE.MatchString(da.Address) {
			v.r.errorf(RuleSchema, KindHardwareProfile, name, da.Pos, "deviceAliases.%s: bay address %.40q must be the bay's number as the RAID controller counts them (0, 1, ...)", alias, da.Address)
		}
	}
	v.baselineOOB(bad, s)
	v.firmware(bad, s)
	if s.RAID != nil {
		v.raid(bad, s)
	}
	if m := s.VirtualMedia; m != nil {
		switch {
		case m.ISO == "" && m.ISOPos.IsSet():
			bad(m.ISOPos, "virtualMedia.iso is empty: write the URL of the boot ISO, or remove virtualMedia")
		case m.ISO != "":
			if p := imageURLProblem(m.ISO, firmwareDir); p != "" {
				bad(orPos(m.ISOPos, m.Pos), "virtualMedia.iso: %s", p)
			}
		}
		if m.SHA256 != "" && !sha256RE.MatchString(m.SHA256) {
			bad(m.Pos, "virtualMedia.sha256 must be 64 hex digits (the ISO's SHA-256), or left out")
		}
	}
}

// baselineOOB reports a baseline on a profile whose OOB type cannot
// apply it (ipmi): once, at the first part, naming every part.
func (v *validator) baselineOOB(bad baselineReport, s *HardwareProfileSpec) {
	if s.OOB.Type != "ipmi" {
		return // redfish can; another driver (a plugin) is checked by the engine
	}
	var parts []string
	var at Pos
	mark := func(part string, pos Pos) {
		parts = append(parts, part)
		if !at.IsSet() {
			at = pos
		}
	}
	if s.BIOS != nil {
		mark("bios", s.BIOS.Pos)
	}
	if len(s.Firmware) > 0 {
		mark("firmware", s.Firmware[0].Pos)
	}
	if s.RAID != nil {
		mark("raid", s.RAID.Pos)
	}
	if s.VirtualMedia != nil {
		mark("virtualMedia", s.VirtualMedia.Pos)
	}
	if len(parts) == 0 {
		return
	}
	bad(at, "%s on an ipmi BMC (oob.type): the ipmi driver cannot update firmware, apply BIOS settings, build RAID volumes or insert virtual media; set oob.type: redfish (with oob.fallback: {type: ipmi} if the BMC speaks both), or remove %s",
		strings.Join(parts, ", "), strings.Join(parts, ", "))
}

// firmwareUse is the first firmware entry that updates a device (or,
// with device "", every device of its component).
type firmwareUse struct {
	index int
	alias string
	pos   Pos
}

// firmware checks the profile's firmware entries.
func (v *validator) firmware(bad baselineReport, s *HardwareProfileSpec) {
	if n := len(s.Firmware); n > MaxFirmwareEntries {
		bad(s.Firmware[0].Pos, "firmware lists %d entries: at most %d", n, MaxFirmwareEntries)
		return
	}
	used := map[string]firmwareUse{} // component NUL device key ("" = every device)
	for i := range s.Firmware {
		f := &s.Firmware[i]
		what := fmt.Sprintf("firmware[%d]", i)
		if p := versionProblem(f.Version); p != "" && (f.Version != "" || f.VersionPos.IsSet()) {
			bad(orPos(f.VersionPos, f.Pos), "%s.version: %s", what, p)
		}
		firmwareImage(bad, orPos(f.Image.Pos, f.Pos), what+".image", firmwareDir, &f.Image)
		buses, known := firmwareBuses[f.Component]
		if !known {
			continue // not in the enum: a schema finding
		}
		keys := firmwareDevices(bad, s, f, what, buses)
		firmwareOnce(bad, used, i, f, keys)
	}
}

// versionProblem is the problem of a firmware version ("" when none):
// at most MaxFirmwareVersionLen printable ASCII characters, no leading or
// trailing space.
func versionProblem(ver string) string {
	if ver == "" {
		return "empty: write the version as the BMC's firmware inventory reports it"
	}
	if len(ver) > MaxFirmwareVersionLen {
		return fmt.Sprintf("%d bytes long, at most %d", len(ver), MaxFirmwareVersionLen)
	}
	for _, c := range []byte(ver) {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%.40q has a character that is not printable ASCII", ver)
		}
	}
	if strings.TrimSpace(ver) != ver {
		return fmt.Sprintf("%q starts or ends with a space", ver)
	}
	return ""
}

// sourceDir is the directory of serve's that a design's file names
// (firmware images, OS images), as findings describe it.
type sourceDir struct {
	name    string // "firmware directory"
	example string // a file name to show
}

var (
	firmwareDir = sourceDir{name: "firmware directory", example: "xe9680-bios-2.19.1.bin"}
	osImageDir  = sourceDir{name: "image directory (serve --image-dir)", example: "gpu-golden.ddraw"}
)

// firmwareImage checks an image: exactly one of url and file (in dir),
// and a SHA-256.
func firmwareImage(bad baselineReport, pos Pos, what string, dir sourceDir, im *FirmwareImage) {
	switch {
	case im.URL == "" && im.File == "":
		bad(pos, "%s needs url (where Slipway fetches it) or file (a file in Slipway's %s)", what, dir.name)
	case im.URL != "" && im.File != "":
		bad(pos, "%s has both url and file: keep one", what)
	case im.URL != "":
		if p := imageURLProblem(im.URL, dir); p != "" {
			bad(pos, "%s.url: %s", what, p)
		}
	default:
		if p := imageFileProblem(im.File, dir); p != "" {
			bad(pos, "%s.file: %s", what, p)
		}
	}
	if (im.SHA256 != "" || im.SHA256Pos.IsSet()) && !sha256RE.MatchString(im.SHA256) {
		bad(orPos(im.SHA256Pos, pos), "%s.sha256 must be 64 hex digits (the image's SHA-256, as sha256sum prints it)", what)
	}
}

// imageURLProblem is the problem of an image or ISO URL ("" when none): an
// http(s) URL with a host and no user information. The URL is never
// repeated: it might carry a password.
func imageURLProblem(raw string, dir sourceDir) string {
	if len(raw) > MaxImageURLLen {
		return fmt.Sprintf("the URL is %d bytes long, at most %d", len(raw), MaxImageURLLen)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "not a URL"
	case u.User != nil:
		return "the URL carries user information: a design holds no credentials; serve the file without them (or put it in Slipway's " + dir.name + " and name it with file)"
	case u.Scheme != "http" && u.Scheme != "https":
		return "not an http or https URL"
	case u.Hostname() == "":
		return "the URL names no host"
	}
	return ""
}

// imageFileProblem is the problem of a file name in dir ("" when none):
// a relative path inside the directory, slash-separated, with no "." or
// ".." element, no backslash or control character.
func imageFileProblem(f string, dir sourceDir) string {
	if len(f) > MaxImageFileLen {
		return fmt.Sprintf("the name is %d bytes long, at most %d", len(f), MaxImageFileLen)
	}
	if !fs.ValidPath(f) || f == "." || strings.ContainsFunc(f, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return fmt.Sprintf("%.60q is not a file in the %s: write a relative name like %s (no leading /, no . or .. element, no backslash or control character)", f, dir.name, dir.example)
	}
	return ""
}

// firmwareDevices checks an entry's devices (aliases of one of buses)
// and returns the keys of the devices it updates: their buses and
// addresses, or "" for every device of the component.
func firmwareDevices(bad baselineReport, s *HardwareProfileSpec, f *FirmwareBaseline, what string, buses []string) map[string]string {
	if len(f.Devices) == 0 {
		return map[string]string{"": ""}
	}
	if buses == nil {
		bad(f.Pos, "%s: component %s names no devices (a machine has one %s); remove devices", what, f.Component, f.Component)
		return nil
	}
	if n := len(f.Devices); n > MaxFirmwareDevices {
		bad(f.Pos, "%s lists %d devices: at most %d", what, n, MaxFirmwareDevices)
		return nil
	}
	keys := map[string]string{}
	for _, alias := range f.Devices {
		da, ok := s.DeviceAliases[alias]
		switch {
		case !ok:
			bad(f.Pos, "%s.devices: %.40q is not one of this profile's deviceAliases (%s)", what, alias, aliasesOn(s, buses))
			continue
		case da.Bus == "scsi" && f.Component == "drive":
			bad(f.Pos, "%s.devices: alias %s is on bus scsi, the operating system's address of a disk, which a BMC's firmware inventory does not report: name the drive by its bay (bus bay), or an NVMe drive by its PCI address (bus nvme)", what, alias)
			continue
		case !slices.Contains(buses, da.Bus):
			bad(f.Pos, "%s.devices: alias %s is on bus %s; a %s is on %s", what, alias, da.Bus, f.Component, strings.Join(buses, " or "))
			continue
		}
		key := da.Bus + " " + strings.ToLower(da.Address)
		if first, dup := keys[key]; dup {
			bad(f.Pos, "%s.devices: %s is the device of %s already", what, alias, first)
			continue
		}
		keys[key] = alias
	}
	return keys
}

// aliasesOn lists a profile's aliases on buses ("none on BUS" when none).
func aliasesOn(s *HardwareProfileSpec, buses []string) string {
	var out []string
	for _, a := range sortedNames(s.DeviceAliases) {
		if slices.Contains(buses, s.DeviceAliases[a].Bus) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return "none on bus " + strings.Join(buses, " or ")
	}
	return strings.Join(out, ", ")
}

// firmwareOnce reports an entry that updates a device an earlier entry
// of the same component updates (every device, for an entry without
// devices), naming the earlier entry and its line.
func firmwareOnce(bad baselineReport, used map[string]firmwareUse, i int, f *FirmwareBaseline, keys map[string]string) {
	prefix := f.Component + "\x00"
	conflict := func(first firmwareUse, dev string) {
		bad(f.Pos, "firmware[%d]: %s firmware of %s is already set by firmware[%d] (%s); one entry per component and device",
			i, f.Component, dev, first.index, first.pos)
	}
	all, allSet := used[prefix]
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		alias := keys[key]
		switch {
		case allSet:
			conflict(all, orText(alias, "every device"))
			return
		case key == "":
			for _, k := range slices.Sorted(maps.Keys(used)) {
				if strings.HasPrefix(k, prefix) {
					conflict(used[k], "every device")
					return
				}
			}
		default:
			if first, dup := used[prefix+key]; dup {
				conflict(first, alias)
				continue
			}
		}
		used[prefix+key] = firmwareUse{i, alias, f.Pos}
	}
}

// raid checks the profile's RAID volumes.
func (v *validator) raid(bad baselineReport, s *HardwareProfileSpec) {
	r := s.RAID
	switch n := len(r.Volumes); {
	case n == 0:
		bad(r.Pos, "raid has no volumes: list them ({name, level, drives}), or remove raid")
		return
	case n > MaxRAIDVolumes:
		bad(r.Pos, "raid lists %d volumes: at most %d", n, MaxRAIDVolumes)
		return
	}
	names := map[string]int{}
	members := map[string]raidMember{} // bay address -> the volume and alias that name it
	boot := -1
	for i := range r.Volumes {
		vol := &r.Volumes[i]
		what := fmt.Sprintf("raid.volumes[%d]", i)
		pos := orPos(vol.Pos, r.Pos)
		if (vol.Name != "" || vol.NamePos.IsSet()) && !raidVolumeNameRE.MatchString(vol.Name) {
			bad(orPos(vol.NamePos, pos), "%s.name %.40q is not a volume name (a letter or digit, then letters, digits, _ . -; at most 32)", what, vol.Name)
		}
		if j, dup := names[vol.Name]; dup && vol.Name != "" {
			bad(pos, "%s: volume %s is already raid.volumes[%d] (%s)", what, vol.Name, j, orPos(r.Volumes[j].Pos, r.Pos))
		} else {
			names[vol.Name] = i
		}
		raidDrives(bad, s, pos, what, i, vol, members)
		if vol.Size != "" {
			if p := fixedSize(vol.Size); p != "" {
				bad(pos, "%s.size: %s (or leave it out for the members' whole capacity)", what, p)
			}
		}
		if vol.Boot {
			if boot >= 0 {
				bad(pos, "%s: volume %s is a boot volume, and so is raid.volumes[%d] %s (%s): a machine boots from one", what, vol.Name, boot, r.Volumes[boot].Name, orPos(r.Volumes[boot].Pos, r.Pos))
			} else {
				boot = i
			}
		}
	}
}

// raidMember is the volume and alias that first named a bay.
type raidMember struct {
	volume int
	alias  string
}

// raidDrives checks a volume's member drives: bay aliases of the
// profile, distinct bays (two aliases of one bay are one drive), in no
// earlier volume (members maps a bay to its volume and alias), as many as
// the level takes.
func raidDrives(bad baselineReport, s *HardwareProfileSpec, pos Pos, what string, i int, vol *RAIDVolume, members map[string]raidMember) {
	if n := len(vol.Drives); n > MaxRAIDDrives {
		bad(pos, "%s lists %d drives: at most %d", what, n, MaxRAIDDrives)
		return
	}
	seen := map[string]bool{}
	for _, d := range vol.Drives {
		da, ok := s.DeviceAliases[d]
		first, in := members[da.Address]
		switch {
		case !ok:
			bad(pos, "%s.drives: %.40q is not one of this profile's deviceAliases (%s)", what, d, aliasesOn(s, []string{"bay"}))
		case da.Bus != "bay":
			bad(pos, "%s.drives: alias %s is on bus %s; a volume's members are drives behind the RAID controller (bus bay, address the bay number)", what, d, da.Bus)
		case seen[d]:
			bad(pos, "%s.drives: %s is listed twice", what, d)
		case in && first.volume == i:
			bad(pos, "%s.drives: %s is bay %s, which %s names already: a drive is listed once", what, d, da.Address, first.alias)
		case in && first.alias == d:
			bad(pos, "%s.drives: %s is already a member of raid.volumes[%d] %s: a drive belongs to one volume", what, d, first.volume, s.RAID.Volumes[first.volume].Name)
		case in:
			bad(pos, "%s.drives: %s is bay %s, a member of raid.volumes[%d] %s (as %s): a drive belongs to one volume", what, d, da.Address, first.volume, s.RAID.Volumes[first.volume].Name, first.alias)
		default:
			members[da.Address] = raidMember{i, d}
		}
		seen[d] = true
	}
	if len(vol.Drives) == 0 {
		if vol.DrivesPos.IsSet() {
			bad(pos, "%s.drives is empty: list the volume's member drives (bay aliases)", what)
		}
		return // else a missing required field, reported as such
	}
	raidLevelFits(bad, pos, what, vol)
}

// raidLevelFits reports a member count the volume's level does not take
// (a level not in the enum is a schema finding).
func raidLevelFits(bad baselineReport, pos Pos, what string, vol *RAIDVolume) {
	m, ok := raidMembers[vol.Level]
	n := len(vol.Drives)
	if ok && (n < m.min || (m.exact && n != m.min) || (m.even && n%2 != 0)) {
		bad(pos, "%s: %s takes %s drives, not %d", what, vol.Level, m.say, n)
	}
}

// baselinePolicy checks the Site's lifecycle.baseline.
func (v *validator) baselinePolicy(site string, l *Lifecycle) {
	b := &l.Baseline
	if b.MaxParallel != nil && (*b.MaxParallel < 1 || *b.MaxParallel > MaxBaselineParallel) {
		v.r.errorf(RuleLifecycle, KindSite, site, orPos(b.MaxParallelPos, orPos(b.Pos, l.Pos)), "lifecycle.baseline.maxParallel %d is outside 1..%d (firmware updates at once in the Site)", *b.MaxParallel, MaxBaselineParallel)
	}
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
