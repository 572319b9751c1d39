package fake

import (
	"cmp"
	"context"
	"hash"
	"slices"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// The fake provisioner's boot images, kept in memory with MAAS's
// semantics: a custom image is a resource with versions (sets), each one
// content file that is appended to chunk by chunk and whose SHA-256 is
// checked when its last byte arrives; only a complete version is usable
// (a deploy installs the newest complete one; a deploy of an image with
// none is taken and fails at install, Failed deployment, as MAAS's). A
// standard image is imported from a boot source that offers
// StandardReleases on StandardArches, complete Script.Polls ImportImage
// calls after it was selected.

// StandardReleases and StandardArches are what the fake's boot source
// offers; ubuntu/jammy and ubuntu/noble on amd64/generic are there from
// the start (as ProbeSite reports).
var (
	StandardReleases = []string{"ubuntu/focal", "ubuntu/jammy", "ubuntu/noble"}
	StandardArches   = []string{"amd64", "arm64"}
)

var _ drivers.ServerImages = (*Server)(nil)

// images is the fake's image state (zero: the two preloaded images are
// added at the first use).
type images struct {
	loaded bool
	nextID int
	res    []*fakeImage
	stats  ImageStats
	// Knobs (tests).
	failChunks    int  // the next n chunks fail with a Transient error
	failLanded    bool // and their content is kept (the answer was lost)
	refuseChecked bool // every completed content is refused as not matching its SHA-256
	syncPolls     int  // a verified upload completes after this many more StartImageUpload/Images calls
}

type fakeImage struct {
	id, name, arch string
	custom         bool
	sets           []*imageSet // oldest first
	importPolls    int         // ImportImage calls left before a selected standard image is complete (-1: not importing)
}

type imageSet struct {
	fileID   string
	sha256   string
	size     int64
	held     int64
	sum      hash.Hash
	complete bool
	spoilt   bool // refused once: refused again at every completion, as MAAS keeps the bytes
	syncing  int  // verified, complete after this many more polls (other region controllers copying it)
}

// ImageStats counts what the fake provisioner did with images, for tests
// that count outcomes from the provisioner's side.
type ImageStats struct {
	Creates, Chunks, ChecksumRefused, Deletes, Imports int
	BytesReceived                                      int64
}

// ImageView is one of the fake provisioner's images as a test reads it.
type ImageView struct {
	ID, Name, Architecture string
	Custom, Complete       bool
	SHA256                 string // of the newest complete version
	Held                   int64  // bytes held of the newest version
	Sets                   int
}

// FailImageChunks makes the next n UploadImageChunk calls fail with a
// Transient error; landed: their content is kept all the same (the
// provisioner took the chunk, its answer was lost).
func (f *Server) FailImageChunks(n int, landed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.img.failChunks, f.img.failLanded = n, landed
}

// RefuseImageChecksums makes the provisioner refuse every completed
// upload's content as not matching its SHA-256 (on) or check it (off).
func (f *Server) RefuseImageChecksums(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.img.refuseChecked = on
}

// DelayImageCompletion makes a verified upload complete only after n more
// StartImageUpload or Images calls, as MAAS with several region
// controllers says complete once the others copied it (0: at once).
func (f *Server) DelayImageCompletion(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.img.syncPolls = n
}

// poll advances the copies of verified uploads by one poll.
func (im *images) poll() {
	for _, r := range im.res {
		for _, s := range r.sets {
			if s.syncing > 0 {
				if s.syncing--; s.syncing == 0 {
					s.complete = true
				}
			}
		}
	}
}

// ImageStats returns the counts of what the provisioner did with images.
func (f *Server) ImageStats() ImageStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.img.stats
}

// ImageViews returns the provisioner's images, sorted by name and
// architecture.
func (f *Server) ImageViews() []ImageView {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.img.load()
	var out []ImageView
	for _, r := range f.img.res {
		v := ImageView{ID: r.id, Name: r.name, Architecture: r.arch, Custom: r.custom, Sets: len(r.sets)}
		if s := r.newestComplete(); s != nil {
			v.Complete, v.SHA256 = true, s.sha256
		}
		if len(r.sets) > 0 {
			v.Held = r.sets[len(r.sets)-1].held
		}
		out = append(out, v)
	}
	return out
}

func (im *images) load() {
	if im.loaded {
		return
	}
	im.loaded = true
	for _, n := range []string{"ubuntu/jammy", "ubuntu/noble"} {
		r := im.add(n, "amd64/generic", false)
		r.sets = append(r.sets, &imageSet{complete: true})
	}
}

func (im *images) add(name, arch string, custom bool) *fakeImage {
	im.nextID++
	r := &fakeImage{id: strconv.Itoa(im.nextID), name: name, arch: arch, custom: custom, importPolls: -1}
	im.res = append(im.res, r)
	slices.SortFunc(im.res, func(a, b *fakeImage) int {
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.arch, b.arch))
	})
	return r
}

func (im *images) find(name, arch string) *fakeImage {
	for _, r := range im.res {
		if r.name == name && r.arch == arch {
			return r
		}
	}
	return nil
}

func (im *images) byID(id string) *fakeImage {
	for _, r := range im.res {
		if r.id == id {
			return r
		}
	}
	return nil
}

func (r *fakeImage) newestComplete() *imageSet {
	for i := len(r.sets) - 1; i >= 0; i-- {
		if r.sets[i].complete {
			return r.sets[i]
		}
	}
	return nil
}

func (r *fakeImage) view() drivers.ProvisionerImage {
	p := drivers.ProvisionerImage{ID: r.id, Name: r.name, Architecture: r.arch, Custom: r.custom}
	if s := r.newestComplete(); s != nil {
		p.Complete, p.SHA256, p.Size = true, s.sha256, s.size
	}
	if n := len(r.sets); n > 0 && !r.sets[n-1].complete {
		s := r.sets[n-1]
		p.Pending = true
		if s.size > 0 {
			p.Progress = 100 * float64(s.held) / float64(s.size)
		}
	}
	if r.importPolls >= 0 && !p.Complete {
		p.Pending = true
	}
	return p
}

// bootImages names every image, complete or not, sorted, as ProbeSite
// reports them (MAAS's boot-resources list says nothing of completeness;
// ubuntu/jammy and ubuntu/noble at first).
func (f *Server) bootImages() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.img.load()
	var out []string
	for _, r := range f.img.res { // sorted by name
		if !slices.Contains(out, r.name) {
			out = append(out, r.name)
		}
	}
	return out
}

// Images lists the provisioner's images.
func (f *Server) Images(ctx context.Context) ([]drivers.ProvisionerImage, error) {
	if _, stop, err := f.begin(ctx, "Images", "", false); stop {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.img.load()
	f.img.poll()
	out := make([]drivers.ProvisionerImage, 0, len(f.img.res))
	for _, r := range f.img.res {
		out = append(out, r.view())
	}
	return out, nil
}

// ImportImage selects a standard image the boot source offers and
// imports it: InProgress for Script.Polls calls, then Done.
func (f *Server) ImportImage(ctx context.Context, img drivers.ImageRef) (drivers.Result, error) {
	if r, stop, err := f.begin(ctx, "ImportImage", "", true); stop {
		return r, err
	}
	if img.Custom() {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: image %s is a custom image: upload it (StartImageUpload), it is not imported", img.Name)
	}
	arch, _, _ := strings.Cut(img.Architecture, "/")
	if !slices.Contains(StandardReleases, img.Name) || !slices.Contains(StandardArches, arch) {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: the boot source offers no %s on %s (it offers %v on %v): check the image's os, release and architecture",
			img.Name, img.Architecture, StandardReleases, StandardArches)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.img.load()
	r := f.img.find(img.Name, orGeneric(img.Architecture))
	if r == nil {
		r = f.img.add(img.Name, orGeneric(img.Architecture), false)
	}
	if r.newestComplete() != nil {
		return drivers.Done("fake: image %s (%s) is imported", img.Name, r.arch), nil
	}
	if r.importPolls < 0 {
		r.importPolls = f.script.Polls
		f.img.stats.Imports++
	}
	if r.importPolls > 0 {
		r.importPolls--
		return drivers.InProgress(RetryAfter, "fake: importing %s (%s)", img.Name, r.arch), nil
	}
	r.importPolls = -1
	r.sets = append(r.sets, &imageSet{complete: true})
	return drivers.Done("fake: image %s (%s) imported", img.Name, r.arch), nil
}

func orGeneric(arch string) string {
	if arch == "" {
		return "amd64/generic"
	}
	if !strings.Contains(arch, "/") {
		return arch + "/generic"
	}
	return arch
}
