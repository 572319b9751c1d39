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

// StartImageUpload finds the version of the custom image with this
// SHA-256 in MAAS (complete: nothing to send; incomplete: resumed where
// MAAS's content ends) or creates a new version with no content.
func (d *Driver) StartImageUpload(ctx context.Context, img drivers.ImageRef) (drivers.ImageUpload, error) {
	if err := checkCustomRef(img); err != nil {
		return drivers.ImageUpload{}, err
	}
	r, err := d.findUploaded(ctx, img)
	if err != nil {
		return drivers.ImageUpload{}, imageErr("image "+img.Name+": find its upload", err)
	}
	if r != nil {
		up, ok, err := resumable(r, img)
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

// resumable is the upload of the newest version of r with the image's
// SHA-256: complete, or at the offset of what MAAS holds. ok false: none
// (or one that cannot resume by whole chunks: a new version is made).
func resumable(r *mBootResource, img drivers.ImageRef) (drivers.ImageUpload, bool, error) {
	for _, s := range r.newestFirst() {
		f, one := s.onlyFile()
		if !one || f.SHA256 != img.SHA256 {
			continue
		}
		if f.Size != img.Size {
			return drivers.ImageUpload{}, false, drivers.Errorf(drivers.Permanent, "maas: image %s: MAAS holds content with SHA-256 %s of %d bytes, not %d: check the image's size",
				img.Name, img.SHA256, f.Size, img.Size)
		}
		up := drivers.ImageUpload{ResourceID: strconv.Itoa(r.ID), Size: f.Size}
		if s.Complete || f.Complete {
			up.Offset, up.Complete = f.Size, true
			return up, true, nil
		}
		fid, ok := uploadFileID(f.UploadURI, r.ID)
		held := heldBytes(f)
		if !ok || held%drivers.ImageChunkSize != 0 && held != f.Size {
			return drivers.ImageUpload{}, false, nil
		}
		up.FileID, up.Offset = fid, held
		return up, true, nil
	}
	return drivers.ImageUpload{}, false, nil
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
	up, ok, err := resumable(&r, img)
	if err != nil {
		return up, err
	}
	if !ok || up.Offset != 0 && !up.Complete {
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

// UploadImageChunk sends one chunk, which MAAS appends. A failed send
// (no answer, or MAAS refusing it) is settled by reading what MAAS holds:
// a chunk that landed is not sent again, one that did not is sent again
// (network errors and 5xx, as many times as the retries setting says);
// anything else is an error saying where MAAS's content ends.
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
		err := d.c.putRaw(ctx, path, chunk)
		if err == nil {
			return advanced(up, end), nil
		}
		if cerr := chunkErr(path, err); errors.Is(cerr, drivers.ErrImageChecksum) || ctx.Err() != nil {
			return up, cerr
		}
		now, rerr := d.heldNow(ctx, up)
		switch {
		case rerr != nil:
			return up, chunkErr(path, err)
		case now.Offset == end:
			return now, nil // it landed; its answer was lost, or it was sent before
		case now.Offset == up.Offset && drivers.Classify(chunkErr(path, err)) == drivers.Transient && attempt < d.c.retries:
			if werr := sleepCtx(ctx, time.Duration(250<<attempt)*time.Millisecond); werr != nil {
				return up, werr
			}
			continue
		}
		cerr := chunkErr(path, err)
		return now, drivers.NewError(drivers.Classify(cerr), fmt.Errorf("%w (MAAS holds %d bytes of it, the chunk started at %d: resume from StartImageUpload)",
			unclassed(cerr), now.Offset, up.Offset))
	}
}

func advanced(up drivers.ImageUpload, end int64) drivers.ImageUpload {
	up.Offset = end
	up.Complete = end == up.Size // the last byte: MAAS checked the SHA-256 before answering 200
	return up
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
	case se.status == http.StatusForbidden && !strings.Contains(se.msg, "type"):
		return drivers.Errorf(drivers.Permanent, "%s: the API key's user is not a MAAS administrator, and only administrators upload boot images (%s): use an admin user's key (maas.apiKey)", what, se.msg)
	case se.status == http.StatusNotFound:
		return drivers.Errorf(drivers.Permanent, "%s: MAAS has no such upload (deleted?): start the upload again", what)
	case se.status >= 500 || se.status == http.StatusTooManyRequests:
		return drivers.Errorf(drivers.Transient, "%s: %d %s", what, se.status, se.msg)
	}
	return drivers.Errorf(drivers.Permanent, "%s: MAAS refused the chunk: %d %s", what, se.status, se.msg)
}

// heldNow reads how much of the upload's file MAAS holds.
func (d *Driver) heldNow(ctx context.Context, up drivers.ImageUpload) (drivers.ImageUpload, error) {
	rid, _ := strconv.Atoi(up.ResourceID)
	r, err := d.readResource(ctx, rid)
	if err != nil {
		return up, err
	}
	sha, _ := d.uploads.Load(up.ResourceID + "/" + up.FileID)
	for _, s := range r.newestFirst() {
		for _, f := range s.Files {
			if fid, ok := uploadFileID(f.UploadURI, rid); ok && fid == up.FileID || f.UploadURI == "" && sha != nil && f.SHA256 == sha {
				now := up
				now.Offset, now.Complete = heldBytes(f), f.Complete || s.Complete
				return now, nil
			}
		}
	}
	return up, drivers.Errorf(drivers.Permanent, "maas: boot resource %d has no file %s any more: start the upload again", rid, up.FileID)
}

// AbandonImageUpload deletes the upload's resource when no version of it
// is complete (nothing half-made is left in MAAS); with one complete, the
// resource stays and its incomplete version is never deployed.
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
	if r.view().Complete {
		return nil
	}
	err = d.c.call(ctx, http.MethodDelete, fmt.Sprintf("boot-resources/%d/", rid), "", nil, nil)
	if isNotFound(err) {
		return nil
	}
	return imageErr(fmt.Sprintf("delete boot resource %d (%s), whose upload was abandoned", rid, r.Name), err)
}
