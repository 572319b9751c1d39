package drivers

import (
	"context"
	"errors"
	"time"
)

// A hardware profile's baseline is the firmware versions, BIOS settings
// and RAID volumes every machine of the model must have. The engine's
// baseline stage reads what a machine has through the optional
// interfaces below, updates and applies what differs, resets the machine
// and reads everything back. OOBBIOS (driver.go) carries the BIOS part.

// Firmware component kinds: what a baseline entry names.
const (
	ComponentBMC   = "bmc"
	ComponentBIOS  = "bios"
	ComponentNIC   = "nic"
	ComponentGPU   = "gpu"
	ComponentDrive = "drive"
	ComponentOther = "other"
)

// FirmwareComponent is one item of a BMC's firmware inventory (Redfish
// UpdateService/FirmwareInventory).
type FirmwareComponent struct {
	// ID is the BMC's own name for the item (the inventory member's Id);
	// it is what FirmwareUpdate.Targets names.
	ID string `json:"id"`
	// Kind is one of the Component constants.
	Kind    string `json:"kind"`
	Name    string `json:"name,omitempty"`
	Version string `json:"version"`
	// Device is the hardware the item belongs to, as the design's device
	// aliases address it: a PCI address (0000:3b:00.0) for NICs and GPUs,
	// a drive's bay or address for drives; "" for the BMC and BIOS.
	Device     string `json:"device,omitempty"`
	Updateable bool   `json:"updateable"`
}

// FirmwareUpdate asks a BMC to install one image on some of its
// inventory's items.
type FirmwareUpdate struct {
	// Targets are FirmwareComponent.IDs the image is for.
	Targets []string `json:"targets"`
	// ImageURL is where the BMC fetches the image from (Slipway serves it
	// after checking its checksum). A driver that pushes the image
	// instead (multipart upload) fetches it there itself.
	ImageURL string `json:"image_url"`
	// SHA256 of the image (hex), and the Version the targets must report
	// once the update has taken effect.
	SHA256  string `json:"sha256"`
	Version string `json:"version"`
}

// ErrUpdateRunning is wrapped, in a Transient error, by
// StartFirmwareUpdate when the BMC is running an update already (one
// started before a crash, or by someone else): the engine never starts a
// second one, and follows or waits for the first.
var ErrUpdateRunning = errors.New("the BMC is running a firmware update already")

// OOBFirmwareUpdate is implemented by OOB drivers that update a server's
// firmware through its BMC (Redfish UpdateService).
type OOBFirmwareUpdate interface {
	// FirmwareInventory lists the BMC's firmware components.
	FirmwareInventory(ctx context.Context, bmc BMC) ([]FirmwareComponent, error)
	// StartFirmwareUpdate starts u and returns a handle to follow it by
	// (a task monitor's URI), which the engine records so that it
	// follows the same update after a restart.
	StartFirmwareUpdate(ctx context.Context, bmc BMC, u FirmwareUpdate) (handle string, err error)
	// FirmwareUpdateStatus follows a started update: InProgress while it
	// runs (the message gives its progress), Done when the BMC has
	// finished it (the new version may need a reset to show), Failed with
	// the BMC's own message when it gave up.
	FirmwareUpdateStatus(ctx context.Context, bmc BMC, handle string) (Result, error)
}

// RAID levels a baseline names.
const (
	RAID0  = "raid0"
	RAID1  = "raid1"
	RAID5  = "raid5"
	RAID6  = "raid6"
	RAID10 = "raid10"
)

// Volume is a RAID volume: wanted (from the design) or found (on the
// controller).
type Volume struct {
	// ID is the controller's name for a found volume; "" for a wanted one.
	ID    string `json:"id,omitempty"`
	Name  string `json:"name"`
	Level string `json:"level"`
	// Drives are the member drives' device-alias addresses (a drive bay
	// as the controller numbers it, e.g. "0", or the drive's Id).
	Drives []string `json:"drives"`
	// SizeBytes: 0 is all the members' capacity.
	SizeBytes int64 `json:"size_bytes,omitempty"`
	// Boot: the volume the machine boots from.
	Boot bool `json:"boot,omitempty"`
}

// StorageDrive is a physical drive behind a RAID controller.
type StorageDrive struct {
	ID            string `json:"id"`
	Bay           string `json:"bay,omitempty"`
	Model         string `json:"model,omitempty"`
	CapacityBytes int64  `json:"capacity_bytes"`
}

// OOBRAID is implemented by OOB drivers that read and build a server's
// RAID volumes through its BMC (Redfish Storage and Volumes).
type OOBRAID interface {
	// Storage lists the controller's drives and volumes.
	Storage(ctx context.Context, bmc BMC) ([]StorageDrive, []Volume, error)
	// CreateVolume builds v: Done when the volume exists, InProgress while
	// the controller builds it (or waits for a reset), Failed with the
	// controller's message when it cannot (a layout it cannot build).
	CreateVolume(ctx context.Context, bmc BMC, v Volume) (Result, error)
	// DeleteVolume removes the volume of that ID.
	DeleteVolume(ctx context.Context, bmc BMC, id string) (Result, error)
}

// BootCD selects the virtual CD as BootDevice.Device.
const BootCD = "cd"

// OOBVirtualMedia is implemented by OOB drivers that attach an ISO image
// to a server as a virtual CD (Redfish VirtualMedia under the Manager),
// for machines that boot without PXE.
type OOBVirtualMedia interface {
	// InsertMedia attaches the image at url; Done once the BMC reports
	// it inserted.
	InsertMedia(ctx context.Context, bmc BMC, url string) (Result, error)
	// EjectMedia detaches it; Done when nothing is inserted.
	EjectMedia(ctx context.Context, bmc BMC) (Result, error)
}

// ResetWait is how long a BMC's own reset after a firmware update takes
// before it answers again, at most, by default: the engine waits this
// long for a BMC that stopped answering after an update before it calls
// it lost.
const ResetWait = 10 * time.Minute
