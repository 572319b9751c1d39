package maas

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// checkCustomRef refuses an ImageRef that is no custom image's: MAAS
// would refuse it too, after the resource was made.
func checkCustomRef(img drivers.ImageRef) error {
	if _, err := hex.DecodeString(img.SHA256); err != nil || len(img.SHA256) != 64 {
		return drivers.Errorf(drivers.Permanent, "maas: image %s: SHA-256 %q is not 64 hex digits", img.Name, img.SHA256)
	}
	if img.Size <= 0 {
		return drivers.Errorf(drivers.Permanent, "maas: image %s: size %d is not positive", img.Name, img.Size)
	}
	bare, ok := strings.CutPrefix(img.Name, "custom/")
	if !ok || bare == "" || strings.Contains(bare, "/") {
		return drivers.Errorf(drivers.Permanent, "maas: image %q: a custom image is named custom/<name>", img.Name)
	}
	return nil
}

func imageArch(img drivers.ImageRef) string {
	if img.Architecture == "" {
		return "amd64/generic"
	}
	return img.Architecture
}

// StartImageUpload finds where the custom image with this SHA-256 stands
// in MAAS, by rules that need no memory of earlier calls (a restarted
// engine finds the same answer): Complete when the NEWEST complete
// version carries this content (the one MAAS deploys); resumed at what
// the receiving region holds when the NEWEST version carries it and is
// incomplete (Offset == Size, not Complete: the other region controllers
// are still copying it; poll until Complete); otherwise a new version
// with no content. A version whose content MAAS refused is never the
// newest once AbandonImageUpload ran (it makes a fresh one), so it is
// never resumed.
func (d *Driver) StartImageUpload(ctx context.Context, img drivers.ImageRef) (drivers.ImageUpload, error) {
	if err := checkCustomRef(img); err != nil {
		return drivers.ImageUpload{}, err
	}
	regions, err := d.regionCount(ctx)
	if err != nil {
		return drivers.ImageUpload{}, imageErr("image "+img.Name+": count the region controllers", err)
	}
	r, err := d.findUploaded(ctx, img)
	if err != nil {
		return drivers.ImageUpload{}, imageErr("image "+img.Name+": find its upload", err)
	}
	if r != nil {
		up, ok, err := resumable(r, img, regions)
		if err != nil || ok {
			d.remember(up, img.SHA256)
			return up, err
		}
	}
	up, err := d.createUpload(ctx, img)
	if err != nil {
		return drivers.ImageUpload{}, imageErr("image "+img.Name+": create it", err)
	}
	d.remember(up, img.SHA256)
	return up, nil
}

// remember keeps which content an upload carries, to know the file again
// once complete (MAAS then gives no upload URI to find it by).
func (d *Driver) remember(up drivers.ImageUpload, sha string) {
	if up.ResourceID != "" && up.FileID != "" {
		d.uploads.Store(up.ResourceID+"/"+up.FileID, sha)
	}
}

// findUploaded reads the Uploaded resource of the image's name and
// architecture (nil: none).
func (d *Driver) findUploaded(ctx context.Context, img drivers.ImageRef) (*mBootResource, error) {
	res, err := d.listResources(ctx, "uploaded")
	if err != nil {
		return nil, err
	}
	bare := strings.TrimPrefix(img.Name, "custom/")
	for _, r := range res {
		if (r.Name == bare || r.Name == img.Name) && r.Architecture == imageArch(img) {
			full, err := d.readResource(ctx, r.ID)
			if isNotFound(err) {
				return nil, nil
			}
			return full, err
		}
	}
	return nil, nil
}

// resumable is the upload of the image's content in r: complete when
// the newest complete version carries it; the newest version when it
// carries it and is incomplete, at the offset of what MAAS holds. ok
// false: neither (or one that cannot resume by whole chunks): a new
// version is made.
func resumable(r *mBootResource, img drivers.ImageRef, regions int) (drivers.ImageUpload, bool, error) {
	sets := r.newestFirst()
	for _, s := range sets {
		if f, one := s.onlyFile(); one && f.SHA256 == img.SHA256 && f.Size != img.Size {
			return drivers.ImageUpload{}, false, drivers.Errorf(drivers.Permanent, "maas: image %s: MAAS holds content with SHA-256 %s of %d bytes, not %d: check the image's size",
				img.Name, img.SHA256, f.Size, img.Size)
		}
	}
	up := drivers.ImageUpload{ResourceID: strconv.Itoa(r.ID), Size: img.Size}
	for _, s := range sets {
		if !s.Complete {
			continue
		}
		if f, one := s.onlyFile(); one && f.SHA256 == img.SHA256 {
			up.Offset, up.Complete = f.Size, true
			return up, true, nil
		}
		break // the newest complete version is other content
	}
	if len(sets) == 0 || sets[0].Complete {
		return drivers.ImageUpload{}, false, nil
	}
	f, one := sets[0].onlyFile()
	if !one || f.SHA256 != img.SHA256 {
		return drivers.ImageUpload{}, false, nil
	}
	fid, ok := uploadFileID(f.UploadURI, r.ID)
	held := heldBytes(f, regions)
	switch {
	case held == f.Size: // all there; the other regions copy it
		up.FileID, up.Offset = fid, held
		return up, true, nil
	case !ok || held%drivers.ImageChunkSize != 0:
		return drivers.ImageUpload{}, false, nil
	}
	up.FileID, up.Offset = fid, held
	return up, true, nil
}

// uploadFileID is the file ID in an upload URI
// (.../boot-resources/{rid}/upload/{fid}/) of resource rid.
func uploadFileID(uri string, rid int) (string, bool) {
	parts := strings.Split(strings.Trim(uri, "/"), "/")
	for i := 1; i+1 < len(parts); i++ {
		if parts[i] == "upload" && parts[i-1] == strconv.Itoa(rid) {
			if _, err := strconv.Atoi(parts[i+1]); err == nil {
				return parts[i+1], true
			}
		}
	}
	return "", false
}

// createUpload creates the image's new version, with no content. Older
// versions are kept (keep_old): they stay in service until this one is
// complete.
func (d *Driver) createUpload(ctx context.Context, img drivers.ImageRef) (drivers.ImageUpload, error) {
	params := url.Values{"name": {img.Name}, "architecture": {imageArch(img)}, "sha256": {img.SHA256},
		"size": {strconv.FormatInt(img.Size, 10)}, "keep_old": {"true"}}
	for k, v := range map[string]string{"filetype": img.Format, "title": img.Title, "base_image": img.BaseImage} {
		if v != "" {
			params.Set(k, v)
		}
	}
	var r mBootResource
	if err := d.c.callLimit(ctx, http.MethodPost, "boot-resources/", "", params, &r, maxImagesAnswer); err != nil {
		return drivers.ImageUpload{}, err
	}
	up, ok, err := resumable(&r, img, 1)
	if err != nil {
		return up, err
	}
	if !ok || up.Offset != 0 && up.Offset != up.Size {
		return drivers.ImageUpload{}, drivers.Errorf(drivers.Transient, "MAAS made boot resource %d but answered no empty version with SHA-256 %s to upload to", r.ID, img.SHA256)
	}
	return up, nil
}

// uploadPath is the upload handler's path of an upload, its IDs checked
// as numbers (they go into the path).
func uploadPath(up drivers.ImageUpload) (string, error) {
	rid, err1 := strconv.Atoi(up.ResourceID)
	fid, err2 := strconv.Atoi(up.FileID)
	if err1 != nil || err2 != nil || rid <= 0 || fid <= 0 {
		return "", drivers.Errorf(drivers.Permanent, "maas: upload %q/%q: not MAAS's resource and file IDs: start the upload again", up.ResourceID, up.FileID)
	}
	return fmt.Sprintf("boot-resources/%d/upload/%d/", rid, fid), nil
}

// UploadImageChunk sends one chunk, which MAAS appends at what it holds
// (it never refuses a repeat that still fits, so a chunk sent twice
// spoils the content). A failed send (no answer, or MAAS refusing it) is
// settled by reading what MAAS holds until two reads agree: a chunk that
// landed is not sent again, one that did not is sent again (network
// errors, timeouts and 5xx, as many times as the retries setting says);
// anything else is an error saying where MAAS's content ends. After the
// last chunk the upload is read back: Complete only when MAAS says so
// (with several region controllers, once the others copied it).
func (d *Driver) UploadImageChunk(ctx context.Context, up drivers.ImageUpload, chunk []byte) (drivers.ImageUpload, error) {
	path, err := uploadPath(up)
	if err != nil {
		return up, err
	}
	end := up.Offset + int64(len(chunk))
	if len(chunk) == 0 || len(chunk) > drivers.ImageChunkSize || up.Offset < 0 || end > up.Size {
		return up, drivers.Errorf(drivers.Permanent, "maas: upload %s: a chunk of %d bytes at %d of %d (1 to %d bytes, within the size)",
			path, len(chunk), up.Offset, up.Size, drivers.ImageChunkSize)
	}
	for attempt := 0; ; attempt++ {
		err := d.c.putRaw(ctx, path, chunk, d.chunkTimeout(up.Size, end == up.Size))
		if err == nil {
			return d.landed(ctx, up, end), nil
		}
		cerr := chunkErr(path, err)
		if errors.Is(cerr, drivers.ErrImageChecksum) || ctx.Err() != nil {
			return up, cerr
		}
		now, rerr := d.settledHeld(ctx, up)
		switch {
		case rerr != nil:
			return up, cerr
		case now.Complete || now.Offset == end:
			return now, nil // it landed; its answer was lost, or it was sent before
		case now.Offset == up.Offset && drivers.Classify(cerr) == drivers.Transient && attempt < d.c.retries:
			if werr := sleepCtx(ctx, time.Duration(250<<attempt)*time.Millisecond); werr != nil {
				return up, werr
			}
			continue
		}
		return now, drivers.NewError(drivers.Classify(cerr), fmt.Errorf("%w (MAAS holds %d bytes of it, the chunk started at %d: resume from StartImageUpload)",
			unclassed(cerr), now.Offset, up.Offset))
	}
}

// hashRate is the slowest rate at which MAAS is assumed to re-read an
// upload's whole file to check its SHA-256, inside the last chunk's PUT.
const hashRate = 32 << 20 // bytes per second

// chunkTimeout bounds a chunk's PUT: the per-request timeout, and for the
// last chunk as much again as MAAS takes to hash the whole file (a
// timeout there would make the caller consider sending it again).
func (d *Driver) chunkTimeout(size int64, last bool) time.Duration {
	if !last {
		return d.c.timeout
	}
	return d.c.timeout + time.Duration(size/hashRate+1)*time.Second
}

// landed is the upload after MAAS took a chunk ending at end: a middle
// chunk advances the offset; after the last one the upload is read back
// and is Complete only when MAAS says so (Offset == Size and not Complete
// while other region controllers copy it: the caller polls
// StartImageUpload or Images).
func (d *Driver) landed(ctx context.Context, up drivers.ImageUpload, end int64) drivers.ImageUpload {
	up.Offset = end
	if end < up.Size {
		return up
	}
	if now, err := d.heldNow(ctx, up); err == nil && now.Complete {
		up.Complete = true
	}
	return up
}

// settle is the interval between the reads of what MAAS holds after a
// failed chunk; settleReads bounds them.
var settle = 500 * time.Millisecond

const settleReads = 6

// settledHeld reads what MAAS holds of the upload until two reads, settle
// apart, agree: MAAS may still be taking a chunk whose answer was lost.
func (d *Driver) settledHeld(ctx context.Context, up drivers.ImageUpload) (drivers.ImageUpload, error) {
	prev, err := d.heldNow(ctx, up)
	for i := 1; err == nil && i < settleReads; i++ {
		if err = sleepCtx(ctx, settle); err != nil {
			return up, err
		}
		var now drivers.ImageUpload
		if now, err = d.heldNow(ctx, up); err == nil && now.Offset == prev.Offset && now.Complete == prev.Complete {
			return now, nil
		}
		prev = now
	}
	if err != nil {
		return up, err
	}
	return up, drivers.Errorf(drivers.Transient, "maas: upload to boot resource %s: what MAAS holds still changes (%d bytes last): resume from StartImageUpload",
		up.ResourceID, prev.Offset)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// chunkErr classifies a failed chunk: MAAS's refusal of the content's
// SHA-256 wraps drivers.ErrImageChecksum.
func chunkErr(path string, err error) error {
	var se *rawStatusError
	if !errors.As(err, &se) {
		return err // putRaw's own: classified, or the context's
	}
	what := "maas PUT " + path
	switch {
	case se.status == http.StatusBadRequest && strings.Contains(se.msg, "SHA256"):
		return drivers.NewError(drivers.Permanent, fmt.Errorf("%s: MAAS refused the content (%s): %w", what, se.msg, drivers.ErrImageChecksum))
	case se.status == http.StatusBadRequest && strings.Contains(se.msg, "Too much data"):
		// MAAS holds more than was sent from this upload (a chunk it took
		// twice): its content is spoilt, like a refused checksum's.
		return drivers.NewError(drivers.Permanent, fmt.Errorf("%s: MAAS refused the content (%s: it took a chunk twice): %w", what, se.msg, drivers.ErrImageChecksum))
	case se.status == http.StatusForbidden && !strings.Contains(se.msg, "type"):
		return drivers.Errorf(drivers.Permanent, "%s: the API key's user is not a MAAS administrator, and only administrators upload boot images (%s): use an admin user's key (maas.apiKey)", what, se.msg)
	case se.status == http.StatusNotFound:
		return drivers.Errorf(drivers.Permanent, "%s: MAAS has no such upload (deleted?): start the upload again", what)
	case se.status >= 500 || se.status == http.StatusTooManyRequests:
		return drivers.Errorf(drivers.Transient, "%s: %d %s", what, se.status, se.msg)
	}
	return drivers.Errorf(drivers.Permanent, "%s: MAAS refused the chunk: %d %s", what, se.status, se.msg)
}

// heldNow reads how much of the upload's file MAAS holds (counting the
// region controllers its progress is spread over) and whether MAAS says
// it is complete.
func (d *Driver) heldNow(ctx context.Context, up drivers.ImageUpload) (drivers.ImageUpload, error) {
	rid, _ := strconv.Atoi(up.ResourceID)
	regions, err := d.regionCount(ctx)
	if err != nil {
		return up, err
	}
	r, err := d.readResource(ctx, rid)
	if err != nil {
		return up, err
	}
	sha, _ := d.uploads.Load(up.ResourceID + "/" + up.FileID)
	for _, s := range r.newestFirst() {
		for _, f := range s.Files {
			if fid, ok := uploadFileID(f.UploadURI, rid); ok && fid == up.FileID || f.UploadURI == "" && sha != nil && f.SHA256 == sha {
				now := up
				now.Offset, now.Complete = heldBytes(f, regions), f.Complete || s.Complete
				return now, nil
			}
		}
	}
	return up, drivers.Errorf(drivers.Permanent, "maas: boot resource %d has no file %s any more: start the upload again", rid, up.FileID)
}

// AbandonImageUpload leaves nothing of an upload MAAS could resume or
// deploy, and never deletes content in service: a resource whose only
// version is this upload's, incomplete, is deleted; when the upload's
// version is the newest of several, a fresh empty version of the same
// content is made after it (keep_old), so the abandoned one (spoilt if
// MAAS refused it) is never resumed; otherwise nothing changes. A
// resource with more than one version is never deleted (on HA with a
// region down every version can read incomplete).
func (d *Driver) AbandonImageUpload(ctx context.Context, up drivers.ImageUpload) error {
	rid, err := strconv.Atoi(up.ResourceID)
	if err != nil || rid <= 0 {
		return drivers.Errorf(drivers.Permanent, "maas: upload of resource %q: not a MAAS resource ID", up.ResourceID)
	}
	defer d.uploads.Delete(up.ResourceID + "/" + up.FileID)
	r, err := d.readResource(ctx, rid)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return imageErr(fmt.Sprintf("abandon the upload to boot resource %d", rid), err)
	}
	if r.Type != typeUploaded {
		return drivers.Errorf(drivers.Permanent, "maas: boot resource %d (%s) is a %s image, not an upload: it is not deleted", rid, r.Name, r.Type)
	}
	sets := r.newestFirst()
	if len(sets) == 0 || sets[0].Complete {
		return nil
	}
	f, one := sets[0].onlyFile()
	if fid, ok := uploadFileID(f.UploadURI, rid); !one || !ok || fid != up.FileID {
		return nil // the newest version is not this upload's
	}
	if len(sets) > 1 {
		return d.retire(ctx, r, f)
	}
	err = d.c.call(ctx, http.MethodDelete, fmt.Sprintf("boot-resources/%d/", rid), "", nil, nil)
	if isNotFound(err) {
		return nil
	}
	return imageErr(fmt.Sprintf("delete boot resource %d (%s), whose upload was abandoned", rid, r.Name), err)
}

// retire makes a fresh empty version of file f's content the newest of
// resource r, so that the abandoned version holding f is never resumed.
func (d *Driver) retire(ctx context.Context, r *mBootResource, f mBootFile) error {
	img := drivers.ImageRef{Name: provisionerName(r.Type, r.Name), Architecture: r.Architecture, Format: formFiletype[f.Filetype],
		SHA256: f.SHA256, Size: f.Size, Title: r.Title, BaseImage: r.BaseImage}
	if _, err := d.createUpload(ctx, img); err != nil {
		return imageErr(fmt.Sprintf("image %s: put a fresh version after the abandoned one of boot resource %d", img.Name, r.ID), err)
	}
	return nil
}

// formFiletype is the create form's filetype of a stored file type
// (MAAS's BootResourceForm choices: ddraw is stored as root-dd.raw, ...).
var formFiletype = map[string]string{"root-tgz": "tgz", "root-tbz": "tbz", "root-txz": "txz", "root-dd": "ddtgz",
	"root-dd.tar.bz2": "ddtbz", "root-dd.tar.xz": "ddtxz", "root-dd.tar": "ddtar", "root-dd.bz2": "ddbz2",
	"root-dd.gz": "ddgz", "root-dd.xz": "ddxz", "root-dd.raw": "ddraw"}
