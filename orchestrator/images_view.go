package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Image states in a Site besides the sync's (record.ImageSync*): absent
// means no sync of this version of the image has run there.
// interrupted: a sync stopped before its end (serve stopped, or the
// tasks asking for it were cancelled); the next sync resumes it.
const (
	ImageAbsent      = "absent"
	ImageInterrupted = "interrupted"
)

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
	// State: synced | syncing | pending | interrupted | failed | absent.
	State    string
	Progress float64
	Error    string
	// Nodes of the Site deploying the image, sorted.
	Nodes   []string
	Task    string
	Updated time.Time
	// Resumed: bytes the last upload found in the provisioner already.
	Resumed int64
	// ProvisionerError: the Site's provisioner could not be asked which
	// images it holds (State is then the engine's record alone).
	ProvisionerError string
}

// ImageStatuses lists every Image document of d in every Site whose
// nodes deploy it (sorted by image, then site), with its sync's state
// (the engine's record) corrected by what each Site's provisioner holds
// (a live read, bounded): an image it holds is synced even when no sync
// ran; one whose newest complete version is not this one is absent.
// A record of another version of the image (another SHA-256, name or
// architecture) is absent.
func (e *Engine) ImageStatuses(ctx context.Context, d *design.Design) ([]ImageStatus, error) {
	out, err := e.recordedStatuses(ctx, d)
	if err != nil {
		return nil, err
	}
	var sites []string
	for _, st := range out {
		if !slices.Contains(sites, st.Site) {
			sites = append(sites, st.Site)
		}
	}
	live := e.liveImages(ctx, sites)
	for i := range out {
		applyLive(&out[i], live[out[i].Site])
	}
	return out, nil
}

// recordedStatuses are the statuses from the engine's sync records.
func (e *Engine) recordedStatuses(ctx context.Context, d *design.Design) ([]ImageStatus, error) {
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
			if sy, ok := byKey[site+"/"+name]; ok && sy.SHA256 == st.SHA256 && sy.Name == st.Name && sy.Architecture == st.Architecture {
				st.State, st.Progress, st.Error, st.Task, st.Updated, st.Resumed = sy.State, sy.Progress(), sy.Error, sy.Task, sy.Updated, sy.Resumed
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// siteImages is one Site's provisioner's images as read, or why not.
type siteImages struct {
	list []drivers.ProvisionerImage
	err  error
}

// imageStatusTimeout bounds the read of one Site's images for a list;
// maxImageReads bounds the Sites read at once.
const (
	imageStatusTimeout = 10 * time.Second
	maxImageReads      = 8
)

// liveImages reads the images of each Site's provisioner, side by side
// (bounded in number and time).
func (e *Engine) liveImages(ctx context.Context, sites []string) map[string]siteImages {
	out := make(map[string]siteImages, len(sites))
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxImageReads)
	for _, site := range sites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			r, ok := e.imgs.reads.get(site)
			if !ok {
				rctx, cancel := context.WithTimeout(ctx, imageStatusTimeout)
				defer cancel()
				si, err := e.serverImages(rctx, site)
				if err == nil {
					r.list, err = si.Images(rctx)
				}
				r.err = err
				e.imgs.reads.put(site, r)
			}
			mu.Lock()
			out[site] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// imageReadTTL is how long a Site's read is reused by the lists: the
// dashboard polls every 2 s, and several viewers do not each read every
// Site's provisioner. A sync's end drops its Site's read.
const imageReadTTL = 2 * time.Second

// imageReads are the Sites' recent reads (zero value ready).
type imageReads struct {
	mu sync.Mutex
	m  map[string]cachedRead
}

type cachedRead struct {
	at time.Time
	r  siteImages
}

func (c *imageReads) get(site string) (siteImages, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cr, ok := c.m[site]
	if !ok || time.Since(cr.at) >= imageReadTTL {
		return siteImages{}, false
	}
	return cr.r, true
}

func (c *imageReads) put(site string, r siteImages) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedRead{}
	}
	for k, cr := range c.m { // bounded by the Sites: drop the stale
		if time.Since(cr.at) >= imageReadTTL {
			delete(c.m, k)
		}
	}
	c.m[site] = cachedRead{at: time.Now(), r: r}
}

func (c *imageReads) drop(site string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, site)
}

// applyLive corrects st by what its Site's provisioner holds. A sync
// that runs keeps its own state (its progress is the provisioner's).
func applyLive(st *ImageStatus, li siteImages) {
	if li.err != nil {
		st.ProvisionerError = fmt.Sprintf("site %s: the provisioner's images could not be read (%v): the state shown is the engine's record alone", st.Site, li.err)
		return
	}
	if st.State == record.ImageSyncing || st.State == record.ImageSyncPending {
		return
	}
	p, ok := findImage(li.list, st.Name, st.Architecture)
	switch {
	case ok && p.Complete && (!st.Custom || p.SHA256 == st.SHA256):
		st.State, st.Progress, st.Error = record.ImageSynced, 100, ""
	case st.State == record.ImageSyncFailed, st.State == ImageInterrupted:
	case !ok:
		st.State, st.Error = ImageAbsent, "the provisioner does not list it"
	case !p.Complete:
		st.State, st.Error = ImageAbsent, "the provisioner has no complete version of it"
	default:
		st.State, st.Error = ImageAbsent, fmt.Sprintf("the provisioner's newest complete version of it carries SHA-256 %s, not this one: a deploy takes that one until this one is synced", p.SHA256)
	}
	if st.State == ImageAbsent {
		st.Progress = 0
	}
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
