package labrun

import (
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
)

// ImageAudit is what the lab says about the OS images of a run: which
// image each deployed machine runs (Lab.DeployedImages: what its MAAS
// region installed, the set's SHA-256 for a custom image) against the
// image its design says (design.ImageOf), and what each MAAS region
// holds (its boot resources and upload counters).
type ImageAudit struct {
	// Matched: machines deployed with exactly the design's image: the
	// provisioner name it says (custom/gpu-golden, ubuntu/jammy) and, for
	// a custom image, the design's SHA-256. A node whose design names no
	// image takes the provisioner's default: any image matches.
	Matched int `json:"matched"`
	// Custom: of Matched, the machines running a custom image.
	Custom int `json:"custom"`
	// Wrong: machines deployed with another image (another name, or a
	// custom image's content with another SHA-256).
	Wrong   []WrongImage   `json:"wrong,omitempty"`
	Regions []RegionImages `json:"regions,omitempty"`
}

// WrongImage is a machine deployed with another image than its design's.
type WrongImage struct {
	Node       string `json:"node"`
	Want       string `json:"want"`
	WantSHA256 string `json:"want_sha256,omitempty"`
	Got        string `json:"got"`
	GotSHA256  string `json:"got_sha256,omitempty"`
}

// RegionImages is one MAAS region's uploaded images and counters.
type RegionImages struct {
	Site     string          `json:"site"`
	Uploaded []UploadedImage `json:"uploaded,omitempty"`
	Stats    maas.ImageStats `json:"stats"`
}

// UploadedImage is an uploaded boot resource as the region holds it.
type UploadedImage struct {
	Name         string `json:"name"`
	Architecture string `json:"architecture"`
	SHA256       string `json:"sha256"`
	Size         int64  `json:"size"`
	Held         int64  `json:"held"` // bytes the region holds of it
	Complete     bool   `json:"complete"`
}

// AuditImages counts, from the lab's state, the machines deployed with
// the image d says and those deployed with another; machines with no
// image (not deployed) are the deploy audit's to count.
func AuditImages(lb *lab.Lab, d *design.Design) ImageAudit {
	var a ImageAudit
	for name, got := range lb.DeployedImages() {
		var want *design.Image
		if n := d.Nodes[name]; n != nil {
			want = d.ImageOf(n)
		}
		if want == nil {
			a.Matched++
			continue
		}
		w := WrongImage{Node: name, Want: want.ProvisionerName(), Got: got.Name(), GotSHA256: got.SHA256}
		if want.Spec.Custom != nil {
			w.WantSHA256 = want.Spec.Custom.Source.SHA256
		}
		if w.Got != w.Want || (w.WantSHA256 != "" && w.GotSHA256 != w.WantSHA256) {
			a.Wrong = append(a.Wrong, w)
			continue
		}
		a.Matched++
		if want.Spec.Custom != nil {
			a.Custom++
		}
	}
	sortWrong(a.Wrong)
	for _, r := range lb.Regions() {
		ri := RegionImages{Site: r.Site, Stats: r.MAAS.ImageStats()}
		for _, b := range r.MAAS.BootResources() {
			if b.Type == "Uploaded" {
				ri.Uploaded = append(ri.Uploaded, UploadedImage{Name: b.Name, Architecture: b.Architecture, SHA256: b.SHA256,
					Size: b.Size, Held: b.Held, Complete: b.Complete})
			}
		}
		a.Regions = append(a.Regions, ri)
	}
	return a
}

func sortWrong(w []WrongImage) {
	slices.SortFunc(w, func(a, b WrongImage) int { return strings.Compare(a.Node, b.Node) })
}
