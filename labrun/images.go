package labrun

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/firmwarestore"
	"github.com/slipway-dev/slipway/sim/labimage"
)

// The lab's OS images live under one temporary directory per run
// (removed at Close):
//
//	source/  the custom Images' files (serve's --image-dir)
//	cache/   the engine's verified copies (serve's --image-cache)
//	maas/    what the lab's MAAS regions hold (sim/lab Config.ImageDir)
const (
	imageSourceDir = "source"
	imageCacheDir  = "cache"
	imageMAASDir   = "maas"
)

// makeImageDir makes the run's image directory.
func makeImageDir() (string, error) {
	dir, err := os.MkdirTemp("", "slipway-lab-images-")
	if err != nil {
		return "", fmt.Errorf("the lab's image directory: %w", err)
	}
	return dir, nil
}

// startImages writes, like startFirmware does for the firmware, the lab
// image (sim/labimage) of every custom Image whose source is a file
// into dir's source directory, named, sized and built for the
// architecture its Image document says, and opens the engine's image
// store on it, as `serve --image-dir` does. An Image whose SHA-256 is
// not the generated content's is refused by the store when the engine
// syncs it, before the lab's MAAS sees a byte, as a wrong image is.
func (env *Env) startImages(d *design.Design) error {
	dir := env.imageDir
	src := filepath.Join(dir, imageSourceDir)
	if err := os.MkdirAll(src, 0o700); err != nil {
		return err
	}
	if err := WriteLabImages(d, src); err != nil {
		return err
	}
	st, err := firmwarestore.New(firmwarestore.Config{Dir: src, CacheDir: filepath.Join(dir, imageCacheDir), MaxBytes: labimage.MaxSize})
	if err != nil {
		return err
	}
	env.Images = st
	return nil
}

// WriteLabImages writes into dir the lab image of every custom Image of
// d whose source is a file of the image directory (a bare file name).
func WriteLabImages(d *design.Design, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(d.Images)) {
		im := d.Images[name]
		if im.Spec.Custom == nil {
			continue
		}
		f := im.Spec.Custom.Source.File
		if f == "" || f != filepath.Base(f) {
			continue
		}
		if _, err := labimage.Write(filepath.Join(dir, f), name, im.Arch(), im.Spec.Custom.Size); err != nil {
			return fmt.Errorf("the lab image of %s: %w", name, err)
		}
	}
	return nil
}

// ImageSourceDir is the lab's image directory (serve's --image-dir): the
// custom Images' generated files.
func (env *Env) ImageSourceDir() string { return filepath.Join(env.imageDir, imageSourceDir) }
