package apitypes

import "time"

// ImageSite is one image of the design in one Site: what the design asks
// (the provisioner's name, architecture, a custom image's SHA-256 and
// size), where its sync stands and which nodes deploy it.
type ImageSite struct {
	Site         string `json:"site"`
	Image        string `json:"image"`
	Name         string `json:"provisioner_name"`
	Architecture string `json:"architecture"`
	Custom       bool   `json:"custom"`
	SHA256       string `json:"sha256,omitempty"`
	Size         int64  `json:"size,omitempty"`
	// State: synced | syncing | pending | interrupted | failed | absent (no sync of
	// this version has run in the Site).
	State string `json:"state"`
	// Progress is the percent of a custom image's content the Site's
	// provisioner holds.
	Progress float64   `json:"progress"`
	Error    string    `json:"error,omitempty"`
	Nodes    []string  `json:"nodes"`
	Task     string    `json:"task,omitempty"`
	Updated  time.Time `json:"updated,omitzero"`
	// Resumed: bytes the last upload found in the provisioner from an
	// earlier, interrupted one.
	Resumed int64 `json:"resumed,omitempty"`
	// ProvisionerError: the Site's provisioner could not be asked which
	// images it holds; State is then the engine's record alone.
	ProvisionerError string `json:"provisioner_error,omitempty"`
}

// Images is GET /images: every image of the current design, per Site.
type Images struct {
	Images []ImageSite `json:"images"`
}

// ImageSyncRequest is POST /images/sync's body: one Site, one Image
// document, or all ("").
type ImageSyncRequest struct {
	Site  string `json:"site,omitempty"`
	Image string `json:"image,omitempty"`
}
