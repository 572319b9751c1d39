package server

import (
	"path/filepath"

	"github.com/slipway-dev/slipway/firmwarestore"
)

// imageStore is the store of the OS images' content the engine uploads
// to the Sites' provisioners: custom images' files (imageDir) and URLs,
// each verified (SHA-256 and exact size) and kept in imageCache (default
// image-cache beside the state) before any provisioner sees a byte. It
// is a store of its own, apart from the firmware store: an image is
// bounded by its Image document's size, at most maxImageBytes.
func (c Config) imageStore() (*firmwarestore.Store, error) {
	cache := c.ImageCache
	if cache == "" {
		cache = filepath.Join(c.dir(), "image-cache")
	}
	return firmwarestore.New(firmwarestore.Config{Dir: c.ImageDir, CacheDir: cache, MaxBytes: maxImageBytes})
}

// maxImageBytes bounds one OS image (64 GiB, the design's bound).
const maxImageBytes = 64 << 30
