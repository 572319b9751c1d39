package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// StartImageUpload finds the version of the custom image with this
// SHA-256 (complete, or incomplete with the bytes it holds) or creates a
// new, empty one; older versions stay in service meanwhile.
func (f *Server) StartImageUpload(ctx context.Context, img drivers.ImageRef) (drivers.ImageUpload, error) {
	if _, stop, err := f.begin(ctx, "StartImageUpload", "", false); stop {
		return drivers.ImageUpload{}, err
	}
	if err := checkCustom(img); err != nil {
		return drivers.ImageUpload{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.img.load()
	arch := orGeneric(img.Architecture)
	for _, r := range f.img.res {
		for _, s := range r.sets {
			if s.sha256 == img.SHA256 && s.size != img.Size {
				return drivers.ImageUpload{}, drivers.Errorf(drivers.Permanent, "fake: image %s: content with SHA-256 %s exists with another size (%d, not %d)", img.Name, img.SHA256, s.size, img.Size)
			}
		}
	}
	r := f.img.find(img.Name, arch)
	if r == nil {
		r = f.img.add(img.Name, arch, true)
	}
	f.img.poll()
	if s := r.newestComplete(); s != nil && s.sha256 == img.SHA256 {
		return upload(r, s), nil // the version a deploy takes
	}
	if n := len(r.sets); n > 0 && !r.sets[n-1].complete && r.sets[n-1].sha256 == img.SHA256 {
		return upload(r, r.sets[n-1]), nil // the newest version, incomplete: resumed
	}
	return upload(r, f.img.newSet(r, img.SHA256, img.Size)), nil
}

// newSet appends a new, empty version of r.
func (im *images) newSet(r *fakeImage, sha string, size int64) *imageSet {
	im.nextID++
	s := &imageSet{fileID: strconv.Itoa(im.nextID), sha256: sha, size: size, sum: sha256.New()}
	r.sets = append(r.sets, s)
	im.stats.Creates++
	return s
}

func upload(r *fakeImage, s *imageSet) drivers.ImageUpload {
	return drivers.ImageUpload{ResourceID: r.id, FileID: s.fileID, Offset: s.held, Size: s.size, Complete: s.complete}
}

// checkCustom refuses an ImageRef that is no custom image's.
func checkCustom(img drivers.ImageRef) error {
	if _, err := hex.DecodeString(img.SHA256); err != nil || len(img.SHA256) != 64 {
		return drivers.Errorf(drivers.Permanent, "image %s: SHA-256 %q is not 64 hex digits", img.Name, img.SHA256)
	}
	if img.Size <= 0 {
		return drivers.Errorf(drivers.Permanent, "image %s: size %d is not positive", img.Name, img.Size)
	}
	if !strings.HasPrefix(img.Name, "custom/") || len(img.Name) == len("custom/") {
		return drivers.Errorf(drivers.Permanent, "image %q: a custom image is named custom/<name>", img.Name)
	}
	return nil
}

// UploadImageChunk appends chunk at up.Offset. A chunk that the
// provisioner holds already (its answer was lost) is not appended again;
// a chunk that does not start where the content ends is refused
// (Transient: StartImageUpload tells where to resume).
func (f *Server) UploadImageChunk(ctx context.Context, up drivers.ImageUpload, chunk []byte) (drivers.ImageUpload, error) {
	if _, stop, err := f.begin(ctx, "UploadImageChunk", "", false); stop {
		return up, err
	}
	if len(chunk) == 0 || len(chunk) > drivers.ImageChunkSize {
		return up, drivers.Errorf(drivers.Permanent, "fake: a chunk of %d bytes (1 to %d)", len(chunk), drivers.ImageChunkSize)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r, s := f.img.set(up)
	if s == nil {
		return up, drivers.Errorf(drivers.Permanent, "fake: no upload %s/%s (deleted?): start it again", up.ResourceID, up.FileID)
	}
	if f.img.failChunks > 0 {
		f.img.failChunks--
		if f.img.failLanded && s.held == up.Offset {
			_ = f.img.appendChunk(s, chunk)
		}
		return up, drivers.Errorf(drivers.Transient, "fake: injected failure of a chunk at %d of image %s", up.Offset, r.name)
	}
	end := up.Offset + int64(len(chunk))
	switch {
	case end == s.held: // sent again after a lost answer
		return upload(r, s), nil
	case s.complete || s.syncing > 0:
		return up, drivers.Errorf(drivers.Permanent, "fake: image %s: cannot upload to a complete file", r.name)
	case up.Offset != s.held:
		return upload(r, s), drivers.Errorf(drivers.Transient, "fake: image %s: the chunk starts at %d but the provisioner holds %d bytes: resume from StartImageUpload", r.name, up.Offset, s.held)
	case end > s.size:
		return up, drivers.NewError(drivers.Permanent, fmt.Errorf("fake: image %s: too much data received (%d bytes past the size %d): %w", r.name, end-s.size, s.size, drivers.ErrImageChecksum))
	}
	if err := f.img.appendChunk(s, chunk); err != nil {
		return upload(r, s), drivers.NewError(drivers.Permanent, fmt.Errorf("fake: image %s (SHA-256 %s): %w", r.name, s.sha256, err))
	}
	return upload(r, s), nil
}

// appendChunk appends and, at the last byte, checks the content. A
// refused content stays as MAAS keeps it: the version holds all but the
// last chunk, spoilt, and every later completion of it is refused too.
// A verified one is complete at once, or after syncPolls polls.
func (im *images) appendChunk(s *imageSet, chunk []byte) error {
	s.sum.Write(chunk)
	s.held += int64(len(chunk))
	im.stats.Chunks++
	im.stats.BytesReceived += int64(len(chunk))
	if s.held < s.size {
		return nil
	}
	if im.refuseChecked || s.spoilt || hex.EncodeToString(s.sum.Sum(nil)) != s.sha256 {
		im.stats.ChecksumRefused++
		s.held -= int64(len(chunk))
		s.spoilt = true
		return drivers.ErrImageChecksum
	}
	if s.syncing = im.syncPolls; s.syncing == 0 {
		s.complete = true
	}
	return nil
}

func (im *images) set(up drivers.ImageUpload) (*fakeImage, *imageSet) {
	r := im.byID(up.ResourceID)
	if r == nil {
		return nil, nil
	}
	for _, s := range r.sets {
		if s.fileID == up.FileID {
			return r, s
		}
	}
	return r, nil
}

// AbandonImageUpload deletes the upload's image when its only version
// is this upload's, incomplete; when this upload's version is the newest
// of several, a fresh empty version of the same content is made after it
// (a refused one is never resumed); a resource with more than one
// version is never deleted.
func (f *Server) AbandonImageUpload(ctx context.Context, up drivers.ImageUpload) error {
	if _, stop, err := f.begin(ctx, "AbandonImageUpload", "", false); stop {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.img.byID(up.ResourceID)
	if r == nil || len(r.sets) == 0 {
		return nil
	}
	newest := r.sets[len(r.sets)-1]
	if newest.complete || newest.syncing > 0 || newest.fileID != up.FileID {
		return nil
	}
	if len(r.sets) > 1 {
		f.img.newSet(r, newest.sha256, newest.size)
		return nil
	}
	for i, x := range f.img.res {
		if x == r {
			f.img.res = append(f.img.res[:i], f.img.res[i+1:]...)
			break
		}
	}
	f.img.stats.Deletes++
	return nil
}

// deployable is the SHA-256 of the version a deploy of image takes ("" for
// an image the fake does not keep: a standard one it was not asked to
// import), or an error when it is a custom image with no complete version.
// Called with f.mu held.
func (f *Server) deployable(image string) (string, error) {
	if !strings.HasPrefix(image, "custom/") {
		return "", nil
	}
	f.img.load()
	for _, r := range f.img.res {
		if r.name != image {
			continue
		}
		if s := r.newestComplete(); s != nil {
			return s.sha256, nil
		}
	}
	return "", drivers.Errorf(drivers.Permanent, "fake: image %s has no complete version in the provisioner: sync it first", image)
}
