package introspection

import "github.com/slipway-dev/slipway/drivers"

// The node-facing documents keep their camelCase names: the bootstrap
// script and the node agent read them, and they are not the control API
// (which moved to snake_case). These are the drivers' link, storage and
// platform types as /v1/self spells them; selfOf converts the drivers'
// values to them, which compiles only while the field sets agree.

// Link is a node interface's link, as /v1/self names its fields.
type Link struct {
	Name          string `json:"name"`
	MTU           int    `json:"mtu"`
	BondMode      string `json:"bondMode"`
	BondHash      string `json:"bondHash,omitempty"`
	LACPRate      string `json:"lacpRate,omitempty"`
	MIIMon        int    `json:"miimon,omitempty"`
	UpDelay       int    `json:"updelay,omitempty"`
	DownDelay     int    `json:"downdelay,omitempty"`
	Trunking      string `json:"trunking"`
	NativeNetwork string `json:"nativeNetwork,omitempty"`
}

// Storage is a node's storage layout, as /v1/self names its fields.
type Storage struct {
	Devices      []StorageDevice `json:"devices,omitempty"`
	VolumeGroups []VolumeGroup   `json:"volumeGroups,omitempty"`
}

// StorageDevice is one disk and its partitions.
type StorageDevice struct {
	Device      drivers.Device `json:"device"`
	Partitions  []Partition    `json:"partitions,omitempty"`
	VolumeGroup string         `json:"volumeGroup,omitempty"`
}

// Partition is one partition of a disk.
type Partition struct {
	Name        string              `json:"name"`
	Size        string              `json:"size"`
	Bootable    bool                `json:"bootable,omitempty"`
	Filesystem  *drivers.Filesystem `json:"filesystem,omitempty"`
	VolumeGroup string              `json:"volumeGroup,omitempty"`
}

// VolumeGroup is an LVM volume group and its logical volumes.
type VolumeGroup struct {
	Name           string                  `json:"name"`
	LogicalVolumes []drivers.LogicalVolume `json:"logicalVolumes,omitempty"`
}

// Platform is the node's image and kernel.
type Platform struct {
	Image        string            `json:"image"`
	Kernel       string            `json:"kernel,omitempty"`
	KernelParams map[string]string `json:"kernelParams,omitempty"`
}

// storageOf is a drivers storage layout in the node's spelling.
func storageOf(s drivers.Storage) Storage {
	var out Storage
	for _, d := range s.Devices {
		sd := StorageDevice{Device: d.Device, VolumeGroup: d.VolumeGroup}
		for _, p := range d.Partitions {
			sd.Partitions = append(sd.Partitions, Partition(p))
		}
		out.Devices = append(out.Devices, sd)
	}
	for _, vg := range s.VolumeGroups {
		out.VolumeGroups = append(out.VolumeGroups, VolumeGroup(vg))
	}
	return out
}

// Bonded reports whether the link bonds its devices.
func (l Link) Bonded() bool { return drivers.Link(l).Bonded() }
