// Design objects on the wire. A design object (a resolved node) speaks
// the design schema's names (docs/site-schema.md: hostProfile,
// kernelParams, ownerData), in JSON as in YAML, whatever the output; the
// API's envelope around it (node detail, task, event, page, problem)
// speaks snake_case. The design package's own JSON names are its stored
// format (revisions are addressed by the hash of that JSON) and never
// reach the API: these types and their conversions stand between.
// Reports about a design (findings, diffs) are envelope: their names are
// one word each, the same in both spellings; a diff's paths, which name
// an object's fields, name them in the schema's names (design.SchemaPath).

package apitypes

import (
	"maps"
	"slices"

	"github.com/slipway-dev/slipway/design"
)

// RenderedNode is the API's design.RenderedNode (conversions below).
type RenderedNode struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       NodeSpec   `json:"spec"`
}

// ObjectMeta is the API's design.ObjectMeta (conversions below).
type ObjectMeta struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

// NodeSpec is the API's design.NodeSpec (conversions below).
type NodeSpec struct {
	HostProfile string `json:"hostProfile"`
	HostSpec
	OOB         NodeOOB              `json:"oob,omitzero"`
	Addressing  []Address            `json:"addressing"`
	BootMAC     string               `json:"bootMac,omitempty"`
	Rack        string               `json:"rack,omitempty"`
	Cabling     map[string]Cable     `json:"cabling,omitempty"`
	Constraints *Constraints         `json:"constraints,omitempty"`
	Hardware    *HardwareProfileSpec `json:"hardware,omitempty"`
}

// HostSpec is the API's design.HostSpec (conversions below).
type HostSpec struct {
	Site            string               `json:"site,omitempty"`
	HardwareProfile string               `json:"hardwareProfile,omitempty"`
	PrimaryNetwork  string               `json:"primaryNetwork,omitempty"`
	Interfaces      map[string]Interface `json:"interfaces,omitempty"`
	Storage         Storage              `json:"storage,omitzero"`
	Platform        Platform             `json:"platform,omitzero"`
	Tags            []string             `json:"tags,omitempty"`
	OwnerData       map[string]string    `json:"ownerData,omitempty"`
	Erase           string               `json:"erase,omitempty"`
	SiteProfile     string               `json:"siteProfile,omitempty"`
}

// Interface is the API's design.Interface (conversions below).
type Interface struct {
	Link     string   `json:"link"`
	Devices  []string `json:"devices,omitempty"`
	Networks []string `json:"networks,omitempty"`
}

// Storage is the API's design.Storage (conversions below).
type Storage struct {
	Devices      map[string]StorageDevice `json:"devices,omitempty"`
	VolumeGroups map[string]VolumeGroup   `json:"volumeGroups,omitempty"`
}

// StorageDevice is the API's design.StorageDevice (conversions below).
type StorageDevice struct {
	Partitions  map[string]Partition `json:"partitions,omitempty"`
	VolumeGroup string               `json:"volumeGroup,omitempty"`
}

// Partition is the API's design.Partition (conversions below).
type Partition struct {
	Size        string      `json:"size,omitempty"`
	Bootable    bool        `json:"bootable,omitempty"`
	Filesystem  *Filesystem `json:"filesystem,omitempty"`
	VolumeGroup string      `json:"volumeGroup,omitempty"`
}

// Filesystem is the API's design.Filesystem (conversions below).
type Filesystem struct {
	FSType     string `json:"fstype,omitempty"`
	Mountpoint string `json:"mountpoint,omitempty"`
	Options    string `json:"options,omitempty"`
	Label      string `json:"label,omitempty"`
}

// VolumeGroup is the API's design.VolumeGroup (conversions below).
type VolumeGroup struct {
	LogicalVolumes map[string]LogicalVolume `json:"logicalVolumes,omitempty"`
}

// LogicalVolume is the API's design.LogicalVolume (conversions below).
type LogicalVolume struct {
	Size       string      `json:"size,omitempty"`
	Filesystem *Filesystem `json:"filesystem,omitempty"`
}

// Platform is the API's design.Platform (conversions below).
type Platform struct {
	Image        string            `json:"image,omitempty"`
	Kernel       string            `json:"kernel,omitempty"`
	KernelParams map[string]string `json:"kernelParams,omitempty"`
}

// NodeOOB is the API's design.NodeOOB (conversions below).
type NodeOOB struct {
	Address     string       `json:"address,omitempty"`
	Port        int          `json:"port,omitempty"`
	Credentials *Credentials `json:"credentials,omitempty"`
	Fingerprint string       `json:"fingerprint,omitempty"`
	SystemID    string       `json:"systemId,omitempty"`
}

// Credentials is the API's design.Credentials (conversions below).
type Credentials struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// Address is the API's design.Address (conversions below).
type Address struct {
	Network string `json:"network"`
	Address string `json:"address"`
}

// Cable is the API's design.Cable (conversions below).
type Cable struct {
	Switch string `json:"switch"`
	Port   string `json:"port"`
}

// Constraints is the API's design.Constraints (conversions below).
type Constraints struct {
	Zone      string   `json:"zone,omitempty"`
	Pool      string   `json:"pool,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	MinCPU    int      `json:"minCpu,omitempty"`
	MinMemory string   `json:"minMemory,omitempty"`
}

// HardwareProfileSpec is the API's design.HardwareProfileSpec (conversions below).
type HardwareProfileSpec struct {
	Vendor        string                 `json:"vendor,omitempty"`
	Model         string                 `json:"model,omitempty"`
	BootMode      string                 `json:"bootMode"`
	OOB           HardwareOOB            `json:"oob"`
	PXE           PXEConfig              `json:"pxe"`
	DeviceAliases map[string]DeviceAlias `json:"deviceAliases,omitempty"`
	Expect        *HardwareExpect        `json:"expect,omitempty"`
	BIOS          *BIOSSettings          `json:"bios,omitempty"`
	Firmware      []FirmwareBaseline     `json:"firmware,omitempty"`
	RAID          *RAIDBaseline          `json:"raid,omitempty"`
	VirtualMedia  *VirtualMediaBoot      `json:"virtualMedia,omitempty"`
	Architecture  string                 `json:"architecture,omitempty"`
}

// HardwareOOB is the API's design.HardwareOOB (conversions below).
type HardwareOOB struct {
	Type        string       `json:"type"`
	Protocol    string       `json:"protocol"`
	Port        int          `json:"port"`
	CipherSuite int          `json:"cipherSuite"`
	Privilege   string       `json:"privilege"`
	Fallback    *OOBFallback `json:"fallback,omitempty"`
	CAFile      string       `json:"caFile,omitempty"`
	Insecure    bool         `json:"insecure,omitempty"`
}

// OOBFallback is the API's design.OOBFallback (conversions below).
type OOBFallback struct {
	Type        string `json:"type"`
	Protocol    string `json:"protocol,omitempty"`
	Port        int    `json:"port,omitempty"`
	CipherSuite int    `json:"cipherSuite,omitempty"`
	Privilege   string `json:"privilege,omitempty"`
}

// PXEConfig is the API's design.PXEConfig (conversions below).
type PXEConfig struct {
	Interface  string `json:"interface,omitempty"`
	Persistent bool   `json:"persistent"`
}

// DeviceAlias is the API's design.DeviceAlias (conversions below).
type DeviceAlias struct {
	Bus     string `json:"bus"`
	Address string `json:"address"`
}

// HardwareExpect is the API's design.HardwareExpect (conversions below).
type HardwareExpect struct {
	CPU       *ExpectCPU            `json:"cpu,omitempty"`
	MemoryMin string                `json:"memoryMin,omitempty"`
	GPUs      *ExpectGPUs           `json:"gpus,omitempty"`
	NICs      map[string]ExpectNIC  `json:"nics,omitempty"`
	Disks     map[string]ExpectDisk `json:"disks,omitempty"`
	Firmware  *ExpectFirmware       `json:"firmware,omitempty"`
	LLDP      bool                  `json:"lldp,omitempty"`
}

// ExpectCPU is the API's design.ExpectCPU (conversions below).
type ExpectCPU struct {
	Count int    `json:"count,omitempty"`
	Model string `json:"model,omitempty"`
}

// ExpectGPUs is the API's design.ExpectGPUs (conversions below).
type ExpectGPUs struct {
	Count     int      `json:"count"`
	Model     string   `json:"model,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
}

// ExpectNIC is the API's design.ExpectNIC (conversions below).
type ExpectNIC struct {
	SpeedMinMbps int    `json:"speedMinMbps,omitempty"`
	Driver       string `json:"driver,omitempty"`
}

// ExpectDisk is the API's design.ExpectDisk (conversions below).
type ExpectDisk struct {
	SizeMin string `json:"sizeMin,omitempty"`
	Model   string `json:"model,omitempty"`
}

// ExpectFirmware is the API's design.ExpectFirmware (conversions below).
type ExpectFirmware struct {
	BIOSMin string `json:"biosMin,omitempty"`
	BMCMin  string `json:"bmcMin,omitempty"`
}

// BIOSSettings is the API's design.BIOSSettings (conversions below).
type BIOSSettings struct {
	Attributes map[string]string `json:"attributes"`
}

// FirmwareBaseline is the API's design.FirmwareBaseline (conversions below).
type FirmwareBaseline struct {
	Component string        `json:"component"`
	Devices   []string      `json:"devices,omitempty"`
	Version   string        `json:"version"`
	Image     FirmwareImage `json:"image"`
}

// FirmwareImage is the API's design.FirmwareImage (conversions below).
type FirmwareImage struct {
	URL    string `json:"url,omitempty"`
	File   string `json:"file,omitempty"`
	SHA256 string `json:"sha256"`
}

// RAIDBaseline is the API's design.RAIDBaseline (conversions below).
type RAIDBaseline struct {
	Volumes []RAIDVolume `json:"volumes"`
}

// RAIDVolume is the API's design.RAIDVolume (conversions below).
type RAIDVolume struct {
	Name   string   `json:"name"`
	Level  string   `json:"level"`
	Drives []string `json:"drives"`
	Size   string   `json:"size,omitempty"`
	Boot   bool     `json:"boot,omitempty"`
}

// VirtualMediaBoot is the API's design.VirtualMediaBoot (conversions below).
type VirtualMediaBoot struct {
	ISO    string `json:"iso"`
	SHA256 string `json:"sha256,omitempty"`
}

// Diff is the API's design.Diff (conversions below).
type Diff struct {
	Kinds []KindDiff `json:"kinds"`
}

// KindDiff is the API's design.KindDiff (conversions below).
type KindDiff struct {
	Kind    string         `json:"kind"`
	Added   []string       `json:"added,omitempty"`
	Removed []string       `json:"removed,omitempty"`
	Changed []ObjectChange `json:"changed,omitempty"`
}

// ObjectChange is the API's design.ObjectChange (conversions below).
type ObjectChange struct {
	Name  string   `json:"name"`
	Paths []string `json:"paths"`
}

// Finding is the API's design.Finding (conversions below).
type Finding struct {
	Rule     string          `json:"rule"`
	Severity design.Severity `json:"severity"`
	Kind     string          `json:"kind"`
	Name     string          `json:"name"`
	File     string          `json:"file"`
	Line     int             `json:"line"`
	Message  string          `json:"message"`
}

// FromRenderedNode converts design.RenderedNode to the wire.
func FromRenderedNode(v design.RenderedNode) RenderedNode {
	var w RenderedNode
	w.APIVersion = v.APIVersion
	w.Kind = v.Kind
	w.Metadata = FromObjectMeta(v.Metadata)
	w.Spec = FromNodeSpec(v.Spec)
	return w
}

// FromObjectMeta converts design.ObjectMeta to the wire.
func FromObjectMeta(v design.ObjectMeta) ObjectMeta {
	var w ObjectMeta
	w.Name = v.Name
	w.Labels = maps.Clone(v.Labels)
	return w
}

// FromNodeSpec converts design.NodeSpec to the wire.
func FromNodeSpec(v design.NodeSpec) NodeSpec {
	var w NodeSpec
	w.HostProfile = v.HostProfile
	w.HostSpec = FromHostSpec(v.HostSpec)
	w.OOB = FromNodeOOB(v.OOB)
	if v.Addressing != nil {
		w.Addressing = make([]Address, len(v.Addressing))
		for i1 := range v.Addressing {
			w.Addressing[i1] = FromAddress(v.Addressing[i1])
		}
	}
	w.BootMAC = v.BootMAC
	w.Rack = v.Rack
	if v.Cabling != nil {
		w.Cabling = make(map[string]Cable, len(v.Cabling))
		for k1 := range v.Cabling {
			w.Cabling[k1] = FromCable(v.Cabling[k1])
		}
	}
	if v.Constraints != nil {
		p1 := FromConstraints(*v.Constraints)
		w.Constraints = &p1
	}
	if v.Hardware != nil {
		p1 := FromHardwareProfileSpec(*v.Hardware)
		w.Hardware = &p1
	}
	return w
}

// FromHostSpec converts design.HostSpec to the wire.
func FromHostSpec(v design.HostSpec) HostSpec {
	var w HostSpec
	w.Site = v.Site
	w.HardwareProfile = v.HardwareProfile
	w.PrimaryNetwork = v.PrimaryNetwork
	if v.Interfaces != nil {
		w.Interfaces = make(map[string]Interface, len(v.Interfaces))
		for k1 := range v.Interfaces {
			w.Interfaces[k1] = FromInterface(v.Interfaces[k1])
		}
	}
	w.Storage = FromStorage(v.Storage)
	w.Platform = FromPlatform(v.Platform)
	w.Tags = slices.Clone(v.Tags)
	w.OwnerData = maps.Clone(v.OwnerData)
	w.Erase = v.Erase
	w.SiteProfile = v.SiteProfile
	return w
}

// FromInterface converts design.Interface to the wire.
func FromInterface(v design.Interface) Interface {
	var w Interface
	w.Link = v.Link
	w.Devices = slices.Clone(v.Devices)
	w.Networks = slices.Clone(v.Networks)
	return w
}

// FromStorage converts design.Storage to the wire.
func FromStorage(v design.Storage) Storage {
	var w Storage
	if v.Devices != nil {
		w.Devices = make(map[string]StorageDevice, len(v.Devices))
		for k1 := range v.Devices {
			w.Devices[k1] = FromStorageDevice(v.Devices[k1])
		}
	}
	if v.VolumeGroups != nil {
		w.VolumeGroups = make(map[string]VolumeGroup, len(v.VolumeGroups))
		for k1 := range v.VolumeGroups {
			w.VolumeGroups[k1] = FromVolumeGroup(v.VolumeGroups[k1])
		}
	}
	return w
}

// FromStorageDevice converts design.StorageDevice to the wire.
func FromStorageDevice(v design.StorageDevice) StorageDevice {
	var w StorageDevice
	if v.Partitions != nil {
		w.Partitions = make(map[string]Partition, len(v.Partitions))
		for k1 := range v.Partitions {
			w.Partitions[k1] = FromPartition(v.Partitions[k1])
		}
	}
	w.VolumeGroup = v.VolumeGroup
	return w
}

// FromPartition converts design.Partition to the wire.
func FromPartition(v design.Partition) Partition {
	var w Partition
	w.Size = v.Size
	w.Bootable = v.Bootable
	if v.Filesystem != nil {
		p1 := FromFilesystem(*v.Filesystem)
		w.Filesystem = &p1
	}
	w.VolumeGroup = v.VolumeGroup
	return w
}

// FromFilesystem converts design.Filesystem to the wire.
func FromFilesystem(v design.Filesystem) Filesystem {
	var w Filesystem
	w.FSType = v.FSType
	w.Mountpoint = v.Mountpoint
	w.Options = v.Options
	w.Label = v.Label
	return w
}

// FromVolumeGroup converts design.VolumeGroup to the wire.
func FromVolumeGroup(v design.VolumeGroup) VolumeGroup {
	var w VolumeGroup
	if v.LogicalVolumes != nil {
		w.LogicalVolumes = make(map[string]LogicalVolume, len(v.LogicalVolumes))
		for k1 := range v.LogicalVolumes {
			w.LogicalVolumes[k1] = FromLogicalVolume(v.LogicalVolumes[k1])
		}
	}
	return w
}

// FromLogicalVolume converts design.LogicalVolume to the wire.
func FromLogicalVolume(v design.LogicalVolume) LogicalVolume {
	var w LogicalVolume
	w.Size = v.Size
	if v.Filesystem != nil {
		p1 := FromFilesystem(*v.Filesystem)
		w.Filesystem = &p1
	}
	return w
}

// FromPlatform converts design.Platform to the wire.
func FromPlatform(v design.Platform) Platform {
	var w Platform
	w.Image = v.Image
	w.Kernel = v.Kernel
	w.KernelParams = maps.Clone(v.KernelParams)
	return w
}

// FromNodeOOB converts design.NodeOOB to the wire.
func FromNodeOOB(v design.NodeOOB) NodeOOB {
	var w NodeOOB
	w.Address = v.Address
	w.Port = v.Port
	if v.Credentials != nil {
		p1 := FromCredentials(*v.Credentials)
		w.Credentials = &p1
	}
	w.Fingerprint = v.Fingerprint
	w.SystemID = v.SystemID
	return w
}

// FromCredentials converts design.Credentials to the wire.
func FromCredentials(v design.Credentials) Credentials {
	var w Credentials
	w.Username = v.Username
	w.Password = v.Password
	return w
}

// FromAddress converts design.Address to the wire.
func FromAddress(v design.Address) Address {
	var w Address
	w.Network = v.Network
	w.Address = v.Address
	return w
}

// FromCable converts design.Cable to the wire.
func FromCable(v design.Cable) Cable {
	var w Cable
	w.Switch = v.Switch
	w.Port = v.Port
	return w
}

// FromConstraints converts design.Constraints to the wire.
func FromConstraints(v design.Constraints) Constraints {
	var w Constraints
	w.Zone = v.Zone
	w.Pool = v.Pool
	w.Tags = slices.Clone(v.Tags)
	w.MinCPU = v.MinCPU
	w.MinMemory = v.MinMemory
	return w
}

// FromHardwareProfileSpec converts design.HardwareProfileSpec to the wire.
func FromHardwareProfileSpec(v design.HardwareProfileSpec) HardwareProfileSpec {
	var w HardwareProfileSpec
	w.Vendor = v.Vendor
	w.Model = v.Model
	w.BootMode = v.BootMode
	w.Architecture = v.Architecture
	w.OOB = FromHardwareOOB(v.OOB)
	w.PXE = FromPXEConfig(v.PXE)
	if v.DeviceAliases != nil {
		w.DeviceAliases = make(map[string]DeviceAlias, len(v.DeviceAliases))
		for k1 := range v.DeviceAliases {
			w.DeviceAliases[k1] = FromDeviceAlias(v.DeviceAliases[k1])
		}
	}
	if v.Expect != nil {
		p1 := FromHardwareExpect(*v.Expect)
		w.Expect = &p1
	}
	if v.BIOS != nil {
		p1 := FromBIOSSettings(*v.BIOS)
		w.BIOS = &p1
	}
	fromBaseline(&w, v)
	return w
}

// fromBaseline converts a hardware profile's baseline (firmware, raid,
// virtualMedia) to the wire.
func fromBaseline(w *HardwareProfileSpec, v design.HardwareProfileSpec) {
	if v.Firmware != nil {
		w.Firmware = make([]FirmwareBaseline, len(v.Firmware))
		for i, f := range v.Firmware {
			w.Firmware[i] = FirmwareBaseline{Component: f.Component, Devices: slices.Clone(f.Devices), Version: f.Version,
				Image: FirmwareImage{URL: f.Image.URL, File: f.Image.File, SHA256: f.Image.SHA256}}
		}
	}
	if v.RAID != nil {
		w.RAID = &RAIDBaseline{}
		if v.RAID.Volumes != nil {
			w.RAID.Volumes = make([]RAIDVolume, len(v.RAID.Volumes))
			for i, x := range v.RAID.Volumes {
				w.RAID.Volumes[i] = RAIDVolume{Name: x.Name, Level: x.Level, Drives: slices.Clone(x.Drives), Size: x.Size, Boot: x.Boot}
			}
		}
	}
	if m := v.VirtualMedia; m != nil {
		w.VirtualMedia = &VirtualMediaBoot{ISO: m.ISO, SHA256: m.SHA256}
	}
}

// FromHardwareOOB converts design.HardwareOOB to the wire.
func FromHardwareOOB(v design.HardwareOOB) HardwareOOB {
	var w HardwareOOB
	w.Type = v.Type
	w.Protocol = v.Protocol
	w.Port = v.Port
	w.CipherSuite = v.CipherSuite
	w.Privilege = v.Privilege
	if v.Fallback != nil {
		p1 := FromOOBFallback(*v.Fallback)
		w.Fallback = &p1
	}
	w.CAFile = v.CAFile
	w.Insecure = v.Insecure
	return w
}

// FromOOBFallback converts design.OOBFallback to the wire.
func FromOOBFallback(v design.OOBFallback) OOBFallback {
	var w OOBFallback
	w.Type = v.Type
	w.Protocol = v.Protocol
	w.Port = v.Port
	w.CipherSuite = v.CipherSuite
	w.Privilege = v.Privilege
	return w
}

// FromPXEConfig converts design.PXEConfig to the wire.
func FromPXEConfig(v design.PXEConfig) PXEConfig {
	var w PXEConfig
	w.Interface = v.Interface
	w.Persistent = v.Persistent
	return w
}

// FromDeviceAlias converts design.DeviceAlias to the wire.
func FromDeviceAlias(v design.DeviceAlias) DeviceAlias {
	var w DeviceAlias
	w.Bus = v.Bus
	w.Address = v.Address
	return w
}

// FromHardwareExpect converts design.HardwareExpect to the wire.
func FromHardwareExpect(v design.HardwareExpect) HardwareExpect {
	var w HardwareExpect
	if v.CPU != nil {
		p1 := FromExpectCPU(*v.CPU)
		w.CPU = &p1
	}
	w.MemoryMin = v.MemoryMin
	if v.GPUs != nil {
		p1 := FromExpectGPUs(*v.GPUs)
		w.GPUs = &p1
	}
	if v.NICs != nil {
		w.NICs = make(map[string]ExpectNIC, len(v.NICs))
		for k1 := range v.NICs {
			w.NICs[k1] = FromExpectNIC(v.NICs[k1])
		}
	}
	if v.Disks != nil {
		w.Disks = make(map[string]ExpectDisk, len(v.Disks))
		for k1 := range v.Disks {
			w.Disks[k1] = FromExpectDisk(v.Disks[k1])
		}
	}
	if v.Firmware != nil {
		p1 := FromExpectFirmware(*v.Firmware)
		w.Firmware = &p1
	}
	w.LLDP = v.LLDP
	return w
}

// FromExpectCPU converts design.ExpectCPU to the wire.
func FromExpectCPU(v design.ExpectCPU) ExpectCPU {
	var w ExpectCPU
	w.Count = v.Count
	w.Model = v.Model
	return w
}

// FromExpectGPUs converts design.ExpectGPUs to the wire.
func FromExpectGPUs(v design.ExpectGPUs) ExpectGPUs {
	var w ExpectGPUs
	w.Count = v.Count
	w.Model = v.Model
	w.Addresses = slices.Clone(v.Addresses)
	return w
}

// FromExpectNIC converts design.ExpectNIC to the wire.
func FromExpectNIC(v design.ExpectNIC) ExpectNIC {
	var w ExpectNIC
	w.SpeedMinMbps = v.SpeedMinMbps
	w.Driver = v.Driver
	return w
}

// FromExpectDisk converts design.ExpectDisk to the wire.
func FromExpectDisk(v design.ExpectDisk) ExpectDisk {
	var w ExpectDisk
	w.SizeMin = v.SizeMin
	w.Model = v.Model
	return w
}

// FromExpectFirmware converts design.ExpectFirmware to the wire.
func FromExpectFirmware(v design.ExpectFirmware) ExpectFirmware {
	var w ExpectFirmware
	w.BIOSMin = v.BIOSMin
	w.BMCMin = v.BMCMin
	return w
}

// FromBIOSSettings converts design.BIOSSettings to the wire.
func FromBIOSSettings(v design.BIOSSettings) BIOSSettings {
	var w BIOSSettings
	w.Attributes = maps.Clone(v.Attributes)
	return w
}

// FromDiff converts design.Diff to the wire.
func FromDiff(v design.Diff) Diff {
	var w Diff
	if v.Kinds != nil {
		w.Kinds = make([]KindDiff, len(v.Kinds))
		for i1 := range v.Kinds {
			w.Kinds[i1] = FromKindDiff(v.Kinds[i1])
		}
	}
	return w
}

// ToDesign converts the wire's Diff back to design.Diff.
func (w Diff) ToDesign() design.Diff {
	var v design.Diff
	if w.Kinds != nil {
		v.Kinds = make([]design.KindDiff, len(w.Kinds))
		for i1 := range w.Kinds {
			v.Kinds[i1] = w.Kinds[i1].ToDesign()
		}
	}
	return v
}

// FromKindDiff converts design.KindDiff to the wire.
func FromKindDiff(v design.KindDiff) KindDiff {
	var w KindDiff
	w.Kind = v.Kind
	w.Added = slices.Clone(v.Added)
	w.Removed = slices.Clone(v.Removed)
	if v.Changed != nil {
		w.Changed = make([]ObjectChange, len(v.Changed))
		for i1 := range v.Changed {
			w.Changed[i1] = FromObjectChange(v.Changed[i1])
			// The paths name the object's fields as the object is printed.
			for i2, p := range w.Changed[i1].Paths {
				w.Changed[i1].Paths[i2] = design.SchemaPath(v.Kind, p)
			}
		}
	}
	return w
}

// ToDesign converts the wire's KindDiff back to design.KindDiff.
func (w KindDiff) ToDesign() design.KindDiff {
	var v design.KindDiff
	v.Kind = w.Kind
	v.Added = slices.Clone(w.Added)
	v.Removed = slices.Clone(w.Removed)
	if w.Changed != nil {
		v.Changed = make([]design.ObjectChange, len(w.Changed))
		for i1 := range w.Changed {
			v.Changed[i1] = w.Changed[i1].ToDesign()
		}
	}
	return v
}

// FromObjectChange converts design.ObjectChange to the wire.
func FromObjectChange(v design.ObjectChange) ObjectChange {
	var w ObjectChange
	w.Name = v.Name
	w.Paths = slices.Clone(v.Paths)
	return w
}

// ToDesign converts the wire's ObjectChange back to design.ObjectChange.
func (w ObjectChange) ToDesign() design.ObjectChange {
	var v design.ObjectChange
	v.Name = w.Name
	v.Paths = slices.Clone(w.Paths)
	return v
}

// FromFinding converts design.Finding to the wire.
func FromFinding(v design.Finding) Finding {
	var w Finding
	w.Rule = v.Rule
	w.Severity = v.Severity
	w.Kind = v.Kind
	w.Name = v.Name
	w.File = v.File
	w.Line = v.Line
	w.Message = v.Message
	return w
}

// ToDesign converts the wire's Finding back to design.Finding.
func (w Finding) ToDesign() design.Finding {
	var v design.Finding
	v.Rule = w.Rule
	v.Severity = w.Severity
	v.Kind = w.Kind
	v.Name = w.Name
	v.File = w.File
	v.Line = w.Line
	v.Message = w.Message
	return v
}

// FromFindings converts design findings to the wire.
func FromFindings(fs design.Findings) []Finding { return Convert(fs, FromFinding) }

// ToDesignFindings converts the wire's findings back to design findings.
func ToDesignFindings(fs []Finding) design.Findings { return Convert(fs, Finding.ToDesign) }
