package ui_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/firmwarestore"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/sim/labimage"
	"github.com/slipway-dev/slipway/ui"
)

// gatedImages is the fake provisioner whose chunk uploads a test can
// hold: after hold(n), n more chunks go through and the next waits until
// open (the sync stays mid-upload, its progress stable, while the page is
// read).
type gatedImages struct {
	*fake.Server
	mu     sync.Mutex
	passes int
	gate   chan struct{}
}

func (g *gatedImages) UploadImageChunk(ctx context.Context, up drivers.ImageUpload, chunk []byte) (drivers.ImageUpload, error) {
	g.mu.Lock()
	wait := g.gate
	if wait != nil && g.passes > 0 {
		g.passes--
		wait = nil
	}
	g.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return up, ctx.Err()
		}
	}
	return g.Server.UploadImageChunk(ctx, up, chunk)
}

func (g *gatedImages) hold(passes int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.passes, g.gate = passes, make(chan struct{})
}

func (g *gatedImages) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gate != nil {
		close(g.gate)
		g.gate = nil
	}
}

// gpuImage is the example's custom GPU image (examples/site-yaml/
// images.yaml): a generated 12 MiB lab image, three chunks.
func gpuImage() *design.Image {
	const size = 3 * drivers.ImageChunkSize
	return &design.Image{Metadata: design.ObjectMeta{Name: "gpu-golden"}, Spec: design.ImageSpec{Architecture: "amd64/generic",
		Custom: &design.CustomImage{Source: design.FirmwareImage{File: "gpu-golden.ddraw", SHA256: labimage.SHA256("gpu-golden", "amd64/generic", size)},
			Format: "ddraw", Size: size, BaseImage: "ubuntu/jammy", Title: "GPU golden image"}}}
}

// withImages makes sure the example's GPU nodes deploy the custom image
// gpu-golden (the example names it; an example without it gets it here)
// and adds a standard Image document, noble, deployed by one other node.
func withImages(d *design.Design) {
	if d.Images == nil {
		d.Images = map[string]*design.Image{}
	}
	if d.Images["gpu-golden"] == nil {
		d.Images["gpu-golden"] = gpuImage()
		for _, n := range d.Nodes {
			if n.Spec.HostProfile == "compute-gpu" || slices.Contains(n.Chain, "compute-gpu") {
				n.Spec.Platform.Image = "gpu-golden"
			}
		}
	}
	d.Images["noble"] = &design.Image{Metadata: design.ObjectMeta{Name: "noble"}, Spec: design.ImageSpec{OS: "ubuntu", Release: "noble"}}
	for _, name := range d.NodeNames() {
		if d.Nodes[name].Spec.Platform.Image != "gpu-golden" {
			d.Nodes[name].Spec.Platform.Image = "noble"
			return
		}
	}
}

// imageContent writes every custom image's file of d into a new image
// directory (the lab's generated content, whose SHA-256 the design pins)
// and returns the store that verifies them.
func imageContent(t *testing.T, d *design.Design) *firmwarestore.Store {
	t.Helper()
	dir := t.TempDir()
	for _, im := range d.Images {
		c := im.Spec.Custom
		if c == nil {
			continue
		}
		sum, err := labimage.Write(filepath.Join(dir, c.Source.File), im.Metadata.Name, im.Arch(), c.Size)
		if err != nil || sum != c.Source.SHA256 {
			t.Fatalf("image %s: the lab's content has SHA-256 %s, the design says %s (%v)", im.Metadata.Name, sum, c.Source.SHA256, err)
		}
	}
	fw, err := firmwarestore.New(firmwarestore.Config{Dir: dir, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return fw
}

// shownImage is one row of the images view as the page shows it.
type shownImage struct {
	Site, Image, Name, Arch, Kind, SHA, State, Error string
	Progress                                         float64 // the bar's value; -1: no bar
	Nodes                                            []string
}

const readImages = `[...document.querySelectorAll('#images section.site')].flatMap(s => [...s.querySelectorAll('tbody tr')].map(r => ({
	site: s.dataset.site, image: r.cells[0].textContent, name: r.cells[1].textContent, arch: r.cells[2].textContent, kind: r.cells[3].textContent,
	sha: (r.cells[4].querySelector('code') || {}).title || '', state: r.querySelector('.state-word').textContent,
	progress: r.querySelector('progress') ? Number(r.querySelector('progress').value) : -1,
	error: (r.querySelector('.img-error') || {}).textContent || '',
	nodes: [...r.cells[7].querySelectorAll('a')].map(a => decodeURIComponent(a.getAttribute('href').slice('#/node/'.length)))})))`

// rowWhere waits until the page's row of image in site has a state word
// matching state (a JavaScript condition on the row r).
func rowWhere(site, image, cond string) string {
	return fmt.Sprintf(`(() => { const s = [...document.querySelectorAll('#images section.site')].find(s => s.dataset.site === %q);
		const r = s && [...s.querySelectorAll('tbody tr')].find(r => r.dataset.image === %q); return !!r && (%s); })()`, site, image, cond)
}

// checkShown compares the images view with the design (one row per Image
// document and Site whose nodes deploy it, its names, checksum and nodes)
// and with what the provisioner holds, read from the fake provisioner
// itself: a row shown synced must be complete there with its SHA-256, a
// bar must not show more than the provisioner holds, and a custom image
// the provisioner holds complete is not shown as anything but synced.
func checkShown(t *testing.T, d *design.Design, rows []shownImage, views []fake.ImageView) {
	t.Helper()
	want := map[string][]string{} // site/image → nodes
	for _, name := range d.NodeNames() {
		if im := d.ImageOf(d.Nodes[name]); im != nil && d.Images[im.Metadata.Name] != nil {
			k := d.SiteNameOf(d.Nodes[name]) + "/" + im.Metadata.Name
			want[k] = append(want[k], name)
		}
	}
	if len(rows) != len(want) {
		t.Errorf("the view shows %d image rows, the design deploys %d image/site pairs: %+v", len(rows), len(want), rows)
	}
	for _, r := range rows {
		k := r.Site + "/" + r.Image
		im := d.Images[r.Image]
		if im == nil || !slices.Equal(r.Nodes, want[k]) {
			t.Errorf("row %s: nodes %v, the design's %v", k, r.Nodes, want[k])
			continue
		}
		if r.Name != im.ProvisionerName() || r.Arch != im.Arch() || (r.Kind == "custom") != (im.Spec.Custom != nil) {
			t.Errorf("row %s: %s %s %s, the design's %s %s custom=%v", k, r.Name, r.Arch, r.Kind, im.ProvisionerName(), im.Arch(), im.Spec.Custom != nil)
		}
		checkHeld(t, r, im, views)
	}
}

func checkHeld(t *testing.T, r shownImage, im *design.Image, views []fake.ImageView) {
	t.Helper()
	var v fake.ImageView
	for _, x := range views {
		if x.Name == r.Name && x.Architecture == r.Arch {
			v = x
		}
	}
	sha, size := "", int64(0)
	if c := im.Spec.Custom; c != nil {
		sha, size = c.Source.SHA256, c.Size
		if r.SHA != sha {
			t.Errorf("row %s/%s: SHA-256 %q, the design's %s", r.Site, r.Image, r.SHA, sha)
		}
	}
	held := v.Complete && v.SHA256 == sha
	switch {
	case r.State == "synced" && !held:
		t.Errorf("row %s/%s shows synced; the provisioner holds %+v (no complete version with SHA-256 %q)", r.Site, r.Image, v, sha)
	case r.State != "synced" && held && sha != "":
		t.Errorf("row %s/%s shows %s; the provisioner holds it complete", r.Site, r.Image, r.State)
	case r.Progress >= 0 && size > 0 && r.Progress > 100*float64(v.Held)/float64(size)+0.5:
		t.Errorf("row %s/%s shows %.1f%%; the provisioner holds %d of %d bytes", r.Site, r.Image, r.Progress, v.Held, size)
	}
}

// TestImagesView: an operator's images view lists the design's images in
// each Site (the example's custom GPU image and a standard one), none
// synced yet as the fake provisioner holds none of them; a sync started
// from the page that the provisioner refuses (its checksum check) shows
// the reason, and the provisioner holds nothing of it; a second sync,
// started from the row's button, shows its bar at what the provisioner
// holds while a chunk is held back, then turns synced as the provisioner
// holds the image complete with its SHA-256 (a screenshot mid-upload goes
// to SLIPWAY_SCREENSHOTS, make screenshots: docs/images). The node view of a GPU node
// names its image; a viewer is offered no Sync. Every state shown is
// checked against the fake provisioner's own view (checkShown).
func TestImagesView(t *testing.T) {
	t.Parallel()
	srvImg := &gatedImages{Server: fake.NewServer(fake.Script{})}
	var d *design.Design
	srv := apitest.Start(t, apitest.WithSeed(38), apitest.WithConfig(func(c *api.Config) { c.UI = ui.Handler() }),
		apitest.WithDesign(func(x *design.Design) { withImages(x); d = x }),
		apitest.WithTune(func(c *orchestrator.Config) { c.Drivers.Server = srvImg; c.Images = imageContent(t, d) }))
	gpu := d.Images["gpu-golden"]
	site := d.ImageSites("gpu-golden")[0]
	b := newBrowser(t)
	b.signIn(t, srv.URL, srv.Token[api.RoleOperator], len(d.Nodes))
	b.run(t, "the images view", 30*time.Second, chromedp.Navigate(srv.URL+"/ui/#/images"),
		poll(rowWhere(site, "gpu-golden", `r.dataset.state === 'absent'`), 20*time.Second))
	checkShown(t, d, eval[[]shownImage](t, b, readImages), srvImg.ImageViews())
	checkAccessibility(t, b, "the images view")

	srvImg.RefuseImageChecksums(true)
	b.run(t, "a sync the provisioner refuses", time.Minute, confirmClick(`//button[@id="sync-all"]`),
		poll(rowWhere(site, "gpu-golden", `r.dataset.state === 'failed' && r.querySelector('.img-error')`), 50*time.Second))
	checkShown(t, d, eval[[]shownImage](t, b, readImages), srvImg.ImageViews())
	if msg := eval[string](t, b, `document.querySelector('#images tr[data-image="gpu-golden"] .img-error').textContent`); !strings.Contains(msg, "refused the uploaded content") {
		t.Errorf("the failed sync shows %q, not the provisioner's refusal", msg)
	}
	if st := srvImg.ImageStats(); st.ChecksumRefused != 1 {
		t.Fatalf("the provisioner refused %d uploads, want 1: %+v", st.ChecksumRefused, st)
	}

	srvImg.RefuseImageChecksums(false)
	srvImg.hold(1)
	syncMidUpload(t, b, srvImg, site, gpu)
	srvImg.open()
	b.run(t, "the sync completes", time.Minute, poll(rowWhere(site, "gpu-golden", `r.dataset.state === 'synced' && !r.querySelector('progress')`), 50*time.Second))
	rows := eval[[]shownImage](t, b, readImages)
	checkShown(t, d, rows, srvImg.ImageViews())
	for _, r := range rows {
		if r.State != "synced" {
			t.Errorf("after the sync, row %s/%s is %s (%s)", r.Site, r.Image, r.State, r.Error)
		}
	}
	checkNodeImage(t, b, srv.URL, d, gpu)
	viewerOffersNoSync(t, b, srv, len(d.Nodes))
}

// syncMidUpload starts the sync from the row's button and, while the
// provisioner holds one chunk and the next is held back, checks that the
// row shows syncing with a bar at the provisioner's share.
func syncMidUpload(t *testing.T, b *browser, srvImg *gatedImages, site string, gpu *design.Image) {
	t.Helper()
	b.run(t, "a sync started from the row", time.Minute,
		confirmClick(fmt.Sprintf(`//section[@data-site=%q]//tr[@data-image="gpu-golden"]//button[text()="Sync"]`, site)),
		poll(rowWhere(site, "gpu-golden", `r.dataset.state === 'syncing' && r.querySelector('progress') && Number(r.querySelector('progress').value) > 0`), 50*time.Second))
	var held int64
	for _, v := range srvImg.ImageViews() {
		if v.Name == gpu.ProvisionerName() {
			held = v.Held
		}
	}
	want := 100 * float64(held) / float64(gpu.Spec.Custom.Size)
	got := eval[float64](t, b, `Number(document.querySelector('#images tr[data-image="gpu-golden"] progress').value)`)
	if held != drivers.ImageChunkSize || math.Abs(got-want) > 0.5 {
		t.Errorf("mid-upload: the bar shows %.1f%%; the provisioner holds %d bytes (%.1f%%), one chunk expected", got, held, want)
	}
	shot(t, b, "dashboard-images.png")
	checkAccessibility(t, b, "the images view with a sync running")
}

// checkNodeImage: a GPU node's view names its image and the image's
// state in its Site.
func checkNodeImage(t *testing.T, b *browser, base string, d *design.Design, gpu *design.Image) {
	t.Helper()
	var node string
	for _, name := range d.NodeNames() {
		if im := d.ImageOf(d.Nodes[name]); im != nil && im.Metadata.Name == gpu.Metadata.Name {
			node = name
			break
		}
	}
	b.run(t, "the GPU node's view", 30*time.Second, chromedp.Navigate(base+"/ui/#/node/"+node),
		poll(`!!document.querySelector('#node-image .state-word')`, 20*time.Second))
	got := eval[string](t, b, `document.querySelector('#node-image').textContent`)
	for _, w := range []string{gpu.ProvisionerName(), gpu.Spec.Custom.Source.SHA256, "synced"} {
		if !strings.Contains(got, w) {
			t.Errorf("node %s's image panel %q lacks %q", node, got, w)
		}
	}
	checkAccessibility(t, b, "the node view with its image")
}

// viewerOffersNoSync: a viewer sees the images, and no Sync button.
func viewerOffersNoSync(t *testing.T, b *browser, srv *apitest.Server, nodes int) {
	t.Helper()
	b.run(t, "sign out", 10*time.Second, signOut())
	b.signIn(t, srv.URL, srv.Token[api.RoleViewer], nodes)
	b.run(t, "a viewer's images view", 30*time.Second, chromedp.Navigate(srv.URL+"/ui/#/images"),
		poll(`document.querySelectorAll('#images tbody tr').length > 0`, 20*time.Second))
	if n := eval[int](t, b, `document.querySelectorAll('#view button').length`); n != 0 {
		t.Errorf("a viewer's images view offers %d buttons", n)
	}
}
