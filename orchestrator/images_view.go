package orchestrator

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Image states in a Site besides the sync's (record.ImageSync*): absent
// means no sync of this version of the image has run there.
const ImageAbsent = "absent"

// ImageStatus is one image of the design in one Site: what the design
// asks and where its sync stands (the engine's record of it).
type ImageStatus struct {
	Site         string
	Image        string // the Image document's name
	Name         string // the provisioner's name
	Architecture string
	Custom       bool
	SHA256       string
	Size         int64
	// State: synced | syncing | pending | failed | absent.
	State    string
	Progress float64
	Error    string
	// Nodes of the Site deploying the image, sorted.
	Nodes   []string
	Task    string
	Updated time.Time
	// Resumed: bytes the last upload found in the provisioner already.
	Resumed int64
}

// ImageStatuses lists every Image document of d in every Site whose
// nodes deploy it (sorted by image, then site), with its sync's state.
// A record of another version of the image (another SHA-256) is absent.
func (e *Engine) ImageStatuses(ctx context.Context, d *design.Design) ([]ImageStatus, error) {
	syncs, err := e.ImageSyncs(ctx)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]record.ImageSync, len(syncs))
	for _, s := range syncs {
		byKey[s.Key()] = s
	}
	var out []ImageStatus
	for _, name := range sortedKeys(d.Images) {
		im := d.Images[name]
		nodes := imageNodes(d, name)
		for _, site := range d.ImageSites(name) {
			st := ImageStatus{Site: site, Image: name, Name: im.ProvisionerName(), Architecture: im.Arch(), Custom: im.Spec.Custom != nil,
				State: ImageAbsent, Nodes: nodes[site]}
			if c := im.Spec.Custom; c != nil {
				st.SHA256, st.Size = c.Source.SHA256, c.Size
			}
			if sy, ok := byKey[site+"/"+name]; ok && sy.SHA256 == st.SHA256 && sy.Name == st.Name {
				st.State, st.Progress, st.Error, st.Task, st.Updated, st.Resumed = sy.State, sy.Progress(), sy.Error, sy.Task, sy.Updated, sy.Resumed
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// imageNodes are the nodes deploying image name, by Site.
func imageNodes(d *design.Design, name string) map[string][]string {
	out := map[string][]string{}
	for _, n := range d.NodeNames() {
		if im := declaredImage(d, d.Nodes[n]); im != nil && im.Metadata.Name == name {
			site := d.SiteNameOf(d.Nodes[n])
			out[site] = append(out[site], n)
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
