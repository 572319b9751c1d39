package design

import (
	"maps"
	"regexp"
	"slices"
)

// BIOSSettings are a hardware model's firmware settings: attribute names
// as the BMC's BIOS attribute registry spells them (Redfish's
// Bios.Attributes, e.g. ProcVirtualization: Enabled), values as strings.
// They are staged through the OOB driver while a node is prepared and
// take effect at the machine's next reset.
type BIOSSettings struct {
	Attributes map[string]string `json:"attributes"`
	Pos        Pos               `json:"-"`
}

// Bounds of a profile's BIOS settings.
const (
	MaxBIOSAttributes = 256
	MaxBIOSValueLen   = 256
	maxBIOSNameLen    = 128
)

var biosNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.:-]*$`)

// bios checks a hardware profile's BIOS settings: at least one, at most
// MaxBIOSAttributes, names as attribute registries write them, bounded
// values.
func (v *validator) bios(profile string, b *BIOSSettings) {
	if b == nil {
		return
	}
	switch n := len(b.Attributes); {
	case n == 0:
		v.r.errorf(RuleSchema, KindHardwareProfile, profile, b.Pos, "bios has no attributes: list the settings to apply (e.g. ProcVirtualization: Enabled), or remove bios")
	case n > MaxBIOSAttributes:
		v.r.errorf(RuleSchema, KindHardwareProfile, profile, b.Pos, "bios lists %d attributes: at most %d", n, MaxBIOSAttributes)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(b.Attributes)) {
		switch val := b.Attributes[name]; {
		case len(name) > maxBIOSNameLen || !biosNameRE.MatchString(name):
			v.r.errorf(RuleSchema, KindHardwareProfile, profile, b.Pos, "bios.attributes: %.40q is not an attribute name (a letter, then letters, digits, _ . : -; at most %d)", name, maxBIOSNameLen)
		case len(val) > MaxBIOSValueLen:
			v.r.errorf(RuleSchema, KindHardwareProfile, profile, b.Pos, "bios.attributes.%s: the value is %d bytes long, at most %d", name, len(val), MaxBIOSValueLen)
		}
	}
}
