package record

import "time"

// Images: the OS images nodes deploy (design Image documents). The
// images stage, just before deploy in the deploy workflow (and first of
// all in the redeploy workflow, before anything is released), waits until
// the node's image is complete in its Site's provisioner; the sync_images
// task syncs the design's images into every Site whose nodes use them.
const (
	ActionSyncImages Action = "sync_images"

	StageImages Stage = "images"

	// EventImageSync is the typed event of an image sync's progress in a
	// Site: started, progress, synced or failed (its message says which).
	EventImageSync = "image.sync"
)

// Image sync states.
const (
	ImageSyncPending = "pending" // asked, not started (waiting for a slot)
	ImageSyncing     = "syncing" // fetching, verifying, uploading or importing
	ImageSynced      = "synced"  // complete in the Site's provisioner
	ImageSyncFailed  = "failed"  // refused or given up: Error says why
)

// ImageSync is where the sync of one image into one Site's provisioner
// is: saved at each state change and after every chunk the provisioner
// took (Offset), so that an engine restarted mid-upload reports it and
// resumes (from the provisioner's own offset, which it asks again).
type ImageSync struct {
	Site  string `json:"site"`
	Image string `json:"image"` // the Image document's name
	// Name is the provisioner's name (custom/gpu-golden, ubuntu/noble),
	// Architecture arch/subarch.
	Name         string `json:"name"`
	Architecture string `json:"architecture"`
	Custom       bool   `json:"custom,omitempty"`
	SHA256       string `json:"sha256,omitempty"`
	// ResourceID, FileID: where the content goes (the provisioner's IDs).
	ResourceID string `json:"resource_id,omitempty"`
	FileID     string `json:"file_id,omitempty"`
	Offset     int64  `json:"offset,omitempty"`
	Size       int64  `json:"size,omitempty"`
	State      string `json:"state"`
	Error      string `json:"error,omitempty"`
	// Task is the task that ran the sync last, Correlation its request
	// ID (its events carry it).
	Task        string    `json:"task,omitempty"`
	Correlation string    `json:"correlation_id,omitempty"`
	Started     time.Time `json:"started,omitzero"`
	Updated     time.Time `json:"updated,omitzero"`
	// Resumed: the upload started from an offset the provisioner held
	// from an earlier, interrupted run (bytes).
	Resumed int64 `json:"resumed,omitempty"`
}

// Key is the record's key in the store: site/image.
func (s ImageSync) Key() string { return s.Site + "/" + s.Image }

// Progress is the percent of the content the provisioner holds (custom
// images), 100 once synced.
func (s ImageSync) Progress() float64 {
	switch {
	case s.State == ImageSynced:
		return 100
	case s.Size <= 0:
		return 0
	}
	return float64(s.Offset) * 100 / float64(s.Size)
}
