package design

// FirmwareBaseline is one component's wanted firmware: every item of that
// kind (or only those of Devices) must run Version; Image installs it.
type FirmwareBaseline struct {
	// Component: bmc | bios | nic | gpu | drive.
	Component string `json:"component" enum:"bmc|bios|nic|gpu|drive" required:"true"`
	// Devices are device aliases (pci for nic and gpu, bay/nvme for
	// drive); empty: every item of the component's kind.
	Devices []string      `json:"devices,omitempty"`
	Version string        `json:"version" required:"true"`
	Image   FirmwareImage `json:"image"`
	Pos     Pos           `json:"-"`
	// VersionPos is set when the version key is written (an empty
	// version is then reported as such, a missing one as required).
	VersionPos Pos `json:"-" pos:"version"`
}

// FirmwareImage is where a firmware image comes from: a URL Slipway
// fetches, or a file in Slipway's firmware directory; either way its
// SHA-256 is checked before any BMC sees it.
type FirmwareImage struct {
	URL    string `json:"url,omitempty"`
	File   string `json:"file,omitempty"`
	SHA256 string `json:"sha256" required:"true"`
	Pos    Pos    `json:"-"`

	SHA256Pos Pos `json:"-" pos:"sha256"`
}

// RAIDBaseline is the RAID volumes a model's controller must have.
type RAIDBaseline struct {
	Volumes []RAIDVolume `json:"volumes"`
	Pos     Pos          `json:"-"`
}

// RAIDVolume is one wanted volume.
type RAIDVolume struct {
	Name  string `json:"name" required:"true"`
	Level string `json:"level" enum:"raid0|raid1|raid5|raid6|raid10" required:"true"`
	// Drives are device aliases of bus bay.
	Drives []string `json:"drives" required:"true"`
	// Size: a size (480gi) or "" for all of the members' capacity.
	Size string `json:"size,omitempty"`
	// Boot: the machine boots from this volume (at most one).
	Boot bool `json:"boot,omitempty"`
	Pos  Pos  `json:"-"`

	NamePos   Pos `json:"-" pos:"name"`
	DrivesPos Pos `json:"-" pos:"drives"`
}

// VirtualMediaBoot is the ISO a model's machines boot from as a virtual
// CD: its URL, reachable by the BMCs, and optionally its SHA-256.
type VirtualMediaBoot struct {
	ISO    string `json:"iso" required:"true"`
	SHA256 string `json:"sha256,omitempty"`
	Pos    Pos    `json:"-"`

	ISOPos Pos `json:"-" pos:"iso"`
}

// BaselinePolicy is a Site's policy for baselines.
type BaselinePolicy struct {
	// Reboots: whether applying a baseline to a deployed node may reboot
	// it: deny (the default) refuses an apply_baseline that needs a
	// reboot unless the task asks for it explicitly; allow reboots it.
	// A node being provisioned is always rebooted as needed.
	Reboots string `json:"reboots,omitempty" enum:"allow|deny"`
	// MaxParallel bounds the firmware updates running at once in the
	// Site (a BMC runs at most one always); default 32.
	MaxParallel *int `json:"max_parallel,omitempty" yaml:"maxParallel"`
	Pos         Pos  `json:"-"`

	MaxParallelPos Pos `json:"-" pos:"maxParallel"`
}
