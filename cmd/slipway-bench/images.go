package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/sim/labimage"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// bench-images: the upload of one custom image into one lab MAAS region
// on loopback, by Slipway's sync (the engine's sync_images task: the
// engine's runner and the real MAAS driver, 4 MiB chunks, the offset
// saved in the state store after each) against a plain curl upload of
// the same file to the same region in the same run (one PUT of the whole
// file; and, unless --no-chunked, one curl per 4 MiB chunk). Outcomes
// are counted from the region's own state: each resource complete with
// the file's SHA-256 (the region's check at the last byte), the bytes it
// received.

// imagesBench are bench-images' settings.
type imagesBench struct {
	size      int64
	noChunked bool
	timeout   time.Duration
	curl      string
	log       bool
}

// Bounds of bench-images' settings.
const (
	maxBenchImageSize = 1 << 30 // the lab's MAAS's bound of one file
	benchImageName    = "bench-image"
	benchImageFile    = "bench-image.ddraw"
	benchImageArch    = "amd64/generic"
)

// UploadRun is one way of uploading the file.
type UploadRun struct {
	Way      string  `json:"way"`
	Requests int     `json:"requests"` // upload requests (PUTs)
	Seconds  float64 `json:"seconds"`
	MiBps    float64 `json:"mib_per_s"`
	// Complete, SHA256OK, Received: the region's state afterwards: the
	// resource complete, its content's SHA-256 the file's, the bytes the
	// region received for it (its ImageStats' BytesReceived delta).
	Complete bool  `json:"complete"`
	SHA256OK bool  `json:"sha256_ok"`
	Received int64 `json:"received"`
}

// ImagesResult is bench-images' outcome.
type ImagesResult struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// VerifySeconds: the engine's image store reading and verifying the
	// file (SHA-256, size) where it is in the image directory, as the
	// first sync does before MAAS sees a byte; measured apart, before the
	// sync, which then finds it verified (unchanged since).
	VerifySeconds float64         `json:"verify_seconds"`
	Slipway       UploadRun       `json:"slipway"`
	Curl          UploadRun       `json:"curl"`
	CurlChunked   *UploadRun      `json:"curl_chunked,omitempty"`
	Ratio         float64         `json:"slipway_over_curl"`         // Slipway's MiB/s over curl's
	RatioChunked  float64         `json:"slipway_over_curl_chunked"` // over one curl per chunk
	RatioCold     float64         `json:"slipway_cold_over_curl"`    // with the verification counted
	Stats         maas.ImageStats `json:"region_stats"`
}

func (a *app) benchImagesCmd() *cobra.Command {
	var b imagesBench
	var mib int
	cmd := &cobra.Command{
		Use:   "bench-images [--size MiB] [--no-chunked]",
		Short: "Upload one generated image into one lab MAAS region by Slipway's sync and by curl; MiB/s and the ratio",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mib < 1 || int64(mib)<<20 > maxBenchImageSize {
				return usageErr(fmt.Errorf("--size %d: use 1..%d (MiB)", mib, maxBenchImageSize>>20))
			}
			if b.timeout <= 0 || b.timeout > time.Hour {
				return usageErr(fmt.Errorf("--timeout %s: use (0, 1h]", b.timeout))
			}
			b.size = int64(mib) << 20
			return a.benchImages(cmd.Context(), b)
		},
	}
	cmd.Flags().IntVar(&mib, "size", 512, "the image's size in MiB (the lab's MAAS takes at most 1024)")
	cmd.Flags().BoolVar(&b.noChunked, "no-chunked", false, "skip the upload by one curl per 4 MiB chunk")
	cmd.Flags().DurationVar(&b.timeout, "timeout", 10*time.Minute, "give up after this long")
	cmd.Flags().StringVar(&b.curl, "curl", "curl", "the curl binary")
	cmd.Flags().BoolVar(&b.log, "log", false, "the lab's and the engine's log on stderr")
	return cmd
}

// benchImages runs the bench and prints its result as JSON; a run whose
// outcomes the region does not confirm fails.
func (a *app) benchImages(ctx context.Context, b imagesBench) error {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	if _, err := exec.LookPath(b.curl); err != nil {
		return usageErr(fmt.Errorf("--curl %s: %w (apt-get install curl)", b.curl, err))
	}
	dir, err := os.MkdirTemp("", "slipway-bench-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env, res, stop, err := startImagesLab(ctx, dir, b)
	if err != nil {
		return err
	}
	defer stop()
	if err := res.slipway(ctx, env); err != nil {
		return err
	}
	if err := res.curls(ctx, env, dir, b); err != nil {
		return err
	}
	res.ratios()
	res.Stats = env.Lab.Regions()[0].MAAS.ImageStats()
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return err
	}
	return res.check()
}

// startImagesLab starts a lab of one generated node in one Site, the
// node deploying the bench's custom image, the image's file generated
// into the lab's image directory (labrun), the state in bbolt.
func startImagesLab(ctx context.Context, dir string, b imagesBench) (*labrun.Env, *ImagesResult, func(), error) {
	d, err := labrun.Generated(ctx, filepath.Join(dir, "site"), 1)
	if err != nil {
		return nil, nil, nil, err
	}
	sum := labimage.SHA256(benchImageName, benchImageArch, b.size)
	d.Images = map[string]*design.Image{benchImageName: {Metadata: design.ObjectMeta{Name: benchImageName}, Spec: design.ImageSpec{
		Architecture: benchImageArch, Custom: &design.CustomImage{Source: design.FirmwareImage{File: benchImageFile, SHA256: sum},
			Format: "ddraw", Size: b.size, BaseImage: "ubuntu/jammy", Title: "bench image"}}}}
	for _, n := range d.Nodes {
		n.Spec.Platform.Image = benchImageName
	}
	st, err := bolt.Open(filepath.Join(dir, "state.db"), bolt.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	log := zerolog.Nop()
	if b.log {
		log = zerolog.New(os.Stderr).With().Timestamp().Logger()
	}
	env, err := labrun.Start(ctx, labrun.Options{Design: d, Store: st, Seed: 1, Log: log})
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	stop := func() {
		env.Close()
		st.Close()
	}
	return env, &ImagesResult{Bytes: b.size, SHA256: sum}, stop, nil
}
