package drivers

import (
	"context"
	"errors"
)

// Boot images: the OS a node deploys. A standard image (ubuntu/jammy) is
// one the provisioner imports from its boot source once it is selected;
// a custom image (custom/gpu-golden) is content Slipway uploads, in
// chunks, verified by the provisioner's own checksum. The engine drives
// the upload chunk by chunk (it records the offset and reports progress)
// through the optional interface below; a provisioner never offers an
// image for deployment before all of its content is there and verified.

// ImageChunkSize is how much content one UploadImageChunk call carries at
// most (4 MiB, as MAAS's own CLI sends).
const ImageChunkSize = 4 << 20

// ErrImageChecksum is wrapped, in a Permanent error, by UploadImageChunk
// when the provisioner refused the content: its SHA-256 is not the one
// the image was created with, or it holds more than was sent (a chunk
// taken twice). That version is spoilt: AbandonImageUpload it.
var ErrImageChecksum = errors.New("the provisioner refused the image's content: its SHA-256 does not match")

// ImageRef names an image as the provisioner knows it and, for a custom
// image, describes its content.
type ImageRef struct {
	// Name is the provisioner's name: ubuntu/jammy, custom/gpu-golden.
	Name string `json:"name"`
	// Architecture is arch/subarch: amd64/generic.
	Architecture string `json:"architecture"`
	// Custom images only: the content's format (MAAS's filetype: tgz,
	// ddtgz, ddraw, ...), SHA-256 (hex), size in bytes, title and the
	// standard image it is built on (ubuntu/jammy).
	Format    string `json:"format,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	Size      int64  `json:"size,omitempty"`
	Title     string `json:"title,omitempty"`
	BaseImage string `json:"base_image,omitempty"`
}

// Custom tells a custom image (with content to upload) from a standard one.
func (r ImageRef) Custom() bool { return r.SHA256 != "" }

// ProvisionerImage is one image as the provisioner holds it.
type ProvisionerImage struct {
	// ID is the provisioner's own ID of the image (MAAS's boot resource).
	ID           string `json:"id"`
	Name         string `json:"name"`
	Architecture string `json:"architecture"`
	// Custom: uploaded content, not imported from a boot source.
	Custom bool `json:"custom"`
	// Complete: a version of the image is all there and verified, so a
	// deploy can use it.
	Complete bool `json:"complete"`
	// SHA256 and Size of the newest complete version's content (custom
	// images; "" and 0 when the provisioner does not say).
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
	// Pending: a newer version is being uploaded or imported, Progress
	// percent of it there.
	Pending  bool    `json:"pending,omitempty"`
	Progress float64 `json:"progress,omitempty"`
}

// ImageUpload is where a custom image's content goes and how much of it
// the provisioner holds.
type ImageUpload struct {
	// ResourceID and FileID are the provisioner's IDs of the image and of
	// its content file (MAAS: boot-resources/{ResourceID}/upload/{FileID}/).
	ResourceID string `json:"resource_id"`
	FileID     string `json:"file_id"`
	// Offset is how many bytes of the content the provisioner holds; the
	// next chunk starts there. Size is the content's whole size.
	Offset int64 `json:"offset"`
	Size   int64 `json:"size"`
	// Complete: all the content is there and the provisioner verified its
	// checksum; the image is usable.
	Complete bool `json:"complete"`
}

// ServerImages is implemented by server drivers that manage the
// provisioner's boot images. Built-in drivers only: the plugin protocol
// does not carry it.
type ServerImages interface {
	// Images lists the provisioner's images.
	Images(ctx context.Context) ([]ProvisionerImage, error)
	// ImportImage makes a standard image one the provisioner imports (a
	// boot-source selection) and starts the import: Done when the image
	// is complete there, InProgress while it imports.
	ImportImage(ctx context.Context, img ImageRef) (Result, error)
	// StartImageUpload returns where a custom image's content goes: the
	// newest version when it carries this SHA-256 and is incomplete (its
	// Offset what the provisioner holds, so that a crashed upload
	// resumes; Offset == Size and not Complete while the provisioner
	// still copies verified content: poll until Complete), else a new one
	// with Offset 0; Complete only when the newest complete version (the
	// one a deploy takes) carries this content.
	StartImageUpload(ctx context.Context, img ImageRef) (ImageUpload, error)
	// UploadImageChunk sends chunk (at most ImageChunkSize bytes), which
	// starts at up.Offset, and returns the upload as the provisioner now
	// holds it. After the last chunk it is Complete when the provisioner
	// says so (else Offset == Size: poll StartImageUpload), or fails with
	// a Permanent error wrapping ErrImageChecksum.
	UploadImageChunk(ctx context.Context, up ImageUpload, chunk []byte) (ImageUpload, error)
	// AbandonImageUpload deletes an upload's image when its only version
	// is this upload's, incomplete; otherwise it never deletes, and makes
	// sure the abandoned version is never resumed (the next
	// StartImageUpload starts a fresh version at 0).
	AbandonImageUpload(ctx context.Context, up ImageUpload) error
}
