package demo

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// ImageCount is the run's OS images: which image every deployed machine
// runs against its design's and what each MAAS region holds, counted by
// the lab (labrun.AuditImages), with the time each Site's sync took by
// the engine's sync records.
type ImageCount struct {
	labrun.ImageAudit
	Syncs []ImageSyncTime `json:"syncs,omitempty"`
}

// ImageSyncTime is one Site's sync of one image, by the engine's record
// (record.ImageSync): from the sync's start until it was synced (a
// custom image: verified locally, then uploaded).
type ImageSyncTime struct {
	Site    string  `json:"site"`
	Image   string  `json:"image"`
	State   string  `json:"state"`
	Bytes   int64   `json:"bytes,omitempty"`
	Seconds float64 `json:"seconds"`
}

// images fills the run's image count once the deploy ended.
func (out *Run) images(ctx context.Context, env *labrun.Env, e *orchestrator.Engine, d *design.Design) error {
	ic := &ImageCount{ImageAudit: labrun.AuditImages(env.Lab, d)}
	syncs, err := e.ImageSyncs(ctx)
	if err != nil {
		return err
	}
	for _, sy := range syncs {
		t := ImageSyncTime{Site: sy.Site, Image: sy.Image, State: sy.State, Bytes: sy.Size}
		if !sy.Started.IsZero() && sy.Updated.After(sy.Started) {
			t.Seconds = sy.Updated.Sub(sy.Started).Seconds()
		}
		ic.Syncs = append(ic.Syncs, t)
	}
	out.Images = ic
	return nil
}

// WrongImages is how many machines run another image than their
// design's, by the lab's count.
func (out Run) WrongImages() int {
	if out.Images == nil {
		return 0
	}
	return len(out.Images.Wrong)
}

// imagesOK: no machine runs another image than its design's.
func (out Run) imagesOK() bool { return out.WrongImages() == 0 }

// imagesText writes the image lines of the summary.
func (out Run) imagesText(w io.Writer) {
	ic := out.Images
	if ic == nil {
		return
	}
	fmt.Fprintf(w, "images: %d deployed machines run the image their design says (%d a custom image, its name and SHA-256 as the lab's MAAS deployed it), %d another (counted by the lab)\n",
		ic.Matched, ic.Custom, len(ic.Wrong))
	for _, x := range ic.Wrong {
		fmt.Fprintf(w, "  WRONG IMAGE %s runs %s %s, its design says %s %s\n", x.Node, x.Got, short(x.GotSHA256), x.Want, short(x.WantSHA256))
	}
	for _, r := range ic.Regions {
		if len(r.Uploaded) == 0 && r.Stats.Creates == 0 {
			continue
		}
		for _, u := range r.Uploaded {
			state := "incomplete"
			if u.Complete {
				state = "complete"
			}
			fmt.Fprintf(w, "  site %s: its MAAS holds uploaded image %s %s %s, %.1f MiB (sha256 %s)%s\n", orLab(r.Site), u.Name, u.Architecture,
				state, mib(u.Held), short(u.SHA256), ic.syncText(r.Site, u.Name))
		}
		fmt.Fprintf(w, "  site %s: %d create(s), %d chunks, %.1f MiB received, %d checksum refusals\n", orLab(r.Site),
			r.Stats.Creates, r.Stats.Chunks, mib(r.Stats.BytesReceived), r.Stats.ChecksumRefused)
	}
}

// syncText is how long the engine's sync of the uploaded image name
// into site took ("" when no record says).
func (ic *ImageCount) syncText(site, name string) string {
	i := slices.IndexFunc(ic.Syncs, func(s ImageSyncTime) bool {
		return (s.Site == site || site == "") && s.Image == name && s.State == record.ImageSynced
	})
	if i < 0 {
		return ""
	}
	s := ic.Syncs[i]
	return fmt.Sprintf("; synced in %.2fs (%.0f MiB/s, verified then uploaded, the engine's record)", s.Seconds, mib(s.Bytes)/max(s.Seconds, 1e-3))
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12] + "…"
	}
	return sha
}

func orLab(site string) string {
	if site == "" {
		return "(the lab's)"
	}
	return site
}
