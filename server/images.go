package server

import (
	"fmt"
	"path/filepath"

	"github.com/slipway-dev/slipway/firmwarestore"
)

// imageStore is the store of the OS images' content the engine uploads
// to the Sites' provisioners: custom images' files (imageDir, verified
// where they are) and URLs (downloaded into imageCache, default
// image-cache beside the state; the newest version asked of each image is
// kept), each verified (SHA-256 and exact size) before any provisioner
// sees a byte. It is a store of its own, apart from the firmware store:
// an image is bounded by its Image document's size, at most
// maxImageBytes; a download by imageFetchIdleTimeout and by 30 minutes
// plus its size at imageFetchMinRate.
func (c Config) imageStore() (*firmwarestore.Store, error) {
	cache := c.ImageCache
	if cache == "" {
		cache = filepath.Join(c.dir(), "image-cache")
	}
	if err := c.checkImageFetch(); err != nil {
		return nil, err
	}
	idle, _ := duration("imageFetchIdleTimeout", c.ImageFetchIdleTimeout)
	return firmwarestore.New(firmwarestore.Config{Dir: c.ImageDir, CacheDir: cache, MaxBytes: maxImageBytes,
		IdleTimeout: idle, MinFetchRate: int64(c.ImageFetchMinRate)})
}

// checkImageFetch checks the image downloads' bounds (Validate).
func (c Config) checkImageFetch() error {
	if _, err := duration("imageFetchIdleTimeout", c.ImageFetchIdleTimeout); err != nil {
		return err
	}
	if c.ImageFetchMinRate < 0 {
		return fmt.Errorf("config imageFetchMinRate %d: want a positive byte count per second (e.g. 4MiB)", c.ImageFetchMinRate)
	}
	return nil
}

// maxImageBytes bounds one OS image (64 GiB, the design's bound).
const maxImageBytes = 64 << 30
