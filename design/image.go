package design

// KindImage is the kind of an Image document: an OS image nodes deploy.
const KindImage = "Image"

// Image is an OS image nodes deploy, selected by a host profile's (or a
// node's, or the Site defaults') platform.image. A standard image is one
// the provisioner imports from its boot source (OS and Release); a custom
// image is content Slipway uploads to the provisioner of every Site whose
// nodes use it (Custom).
type Image struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     ImageSpec  `json:"spec"`
}

// ImageSpec describes an image.
type ImageSpec struct {
	// OS and Release name a standard image (ubuntu, jammy). A custom
	// image leaves them empty: its OS is "custom".
	OS      string `json:"os,omitempty"`
	Release string `json:"release,omitempty"`
	// Architecture is arch/subarch as the provisioner names it
	// (amd64/generic, the default); its arch must be the hardware
	// profile's of every node that deploys the image.
	Architecture string `json:"architecture,omitempty"`
	// Custom is a custom image's content; nil for a standard image.
	Custom *CustomImage `json:"custom,omitempty"`
	Pos    Pos          `json:"-"`

	ArchitecturePos Pos `json:"-" pos:"architecture"`
}

// CustomImage is a custom image's content: where it comes from (a URL
// Slipway fetches, or a file in serve's image directory) with its
// SHA-256, its format as the provisioner takes it, and its exact size.
type CustomImage struct {
	Source FirmwareImage `json:"source"`
	// Format is MAAS's filetype: tgz (a root file system tarball), or a
	// disk image: ddtgz, ddtbz, ddtxz, ddtar, ddbz2, ddgz, ddxz, ddraw.
	Format string `json:"format" enum:"tgz|tbz|txz|ddtgz|ddtbz|ddtxz|ddtar|ddbz2|ddgz|ddxz|ddraw" required:"true"`
	// Size in bytes, exactly the content's.
	Size int64 `json:"size" required:"true"`
	// BaseImage is the standard image the custom one is built on
	// (ubuntu/jammy): the provisioner boots its kernel and commissioning
	// environment.
	BaseImage string `json:"base_image,omitempty" yaml:"baseImage"`
	// Title is shown by the provisioner's UI.
	Title string `json:"title,omitempty"`
	Pos   Pos    `json:"-"`

	SizePos      Pos `json:"-" pos:"size"`
	BaseImagePos Pos `json:"-" pos:"baseImage"`
	TitlePos     Pos `json:"-" pos:"title"`
}
