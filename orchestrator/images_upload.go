package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// uploadImage verifies a custom image's content locally, then uploads
// it from the offset the provisioner reports, a chunk at a time, the
// offset saved after each. A checksum the provisioner refuses abandons
// the upload (see abandon); the previous image, if any, stays in service.
func (e *Engine) uploadImage(ctx context.Context, si drivers.ServerImages, sy *record.ImageSync, im *design.Image, path string) error {
	c := im.Spec.Custom
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("site %s, image %s: open the verified content: %w", sy.Site, sy.Image, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() != c.Size {
		return fmt.Errorf("site %s, image %s: the verified content is not %d bytes as the Image document says: refused before the provisioner saw a byte (fix its size)", sy.Site, sy.Image, c.Size)
	}
	ref := imageRef(im)
	up, err := e.startUpload(ctx, si, sy, ref)
	if err != nil {
		return err
	}
	if up.Offset > 0 && !up.Complete {
		sy.Resumed = up.Offset
		e.imageEvent(sy, "info", "site %s, image %s: the provisioner holds %d of %d bytes from an earlier upload: resumed there", sy.Site, sy.Image, up.Offset, up.Size)
	}
	return e.uploadChunks(ctx, si, sy, ref, f, up)
}

// imageContent fetches and verifies a custom image's content (nothing
// for a standard one: ""), before the sync takes an upload slot: the
// store fetches each version once, whichever Sites wait for it.
func (e *Engine) imageContent(ctx context.Context, sy *record.ImageSync, im *design.Image) (string, error) {
	c := im.Spec.Custom
	if c == nil {
		return "", nil
	}
	if e.cfg.Images == nil {
		return "", fmt.Errorf("site %s, image %s: no image store is configured to read its content (serve --image-dir DIR): nothing was uploaded", sy.Site, sy.Image)
	}
	path, err := e.cfg.Images.ImagePath(ctx, im.Metadata.Name, c.Source, c.Size)
	if err != nil {
		return "", fmt.Errorf("site %s: %w; the previous image stays in service", sy.Site, err)
	}
	return path, nil
}

// startUpload asks the provisioner where the content goes and how much
// of it it holds, and records it.
func (e *Engine) startUpload(ctx context.Context, si drivers.ServerImages, sy *record.ImageSync, ref drivers.ImageRef) (drivers.ImageUpload, error) {
	var up drivers.ImageUpload
	err := e.imageCall(ctx, sy, "start the upload", func(ctx context.Context) (err error) {
		up, err = si.StartImageUpload(ctx, ref)
		return err
	})
	if err != nil {
		return up, err
	}
	if up.Offset < 0 || up.Offset > ref.Size || (up.Size != 0 && up.Size != ref.Size) {
		return up, fmt.Errorf("site %s, image %s: the provisioner reports %d of %d bytes held for an image of %d bytes: not resumable (delete its boot resource %s and sync again)",
			sy.Site, sy.Image, up.Offset, up.Size, ref.Size, up.ResourceID)
	}
	sy.ResourceID, sy.FileID, sy.Offset = up.ResourceID, up.FileID, up.Offset
	return up, e.saveImageSync(ctx, sy, "", "")
}

// uploadChunks sends the content from up.Offset to its end. After a
// transient failure the provisioner is asked again where it stands (a
// chunk it took before the answer was lost is not sent twice).
func (e *Engine) uploadChunks(ctx context.Context, si drivers.ServerImages, sy *record.ImageSync, ref drivers.ImageRef, f io.ReaderAt, up drivers.ImageUpload) error {
	buf := make([]byte, drivers.ImageChunkSize)
	failures, lastPct := 0, -1
	for !up.Complete {
		if err := ctx.Err(); err != nil {
			return err // stopped (cancelled, or the engine stops): see interrupted
		}
		if up.Offset >= ref.Size {
			return e.awaitCopies(ctx, si, sy, ref, up)
		}
		n := int(min(int64(len(buf)), ref.Size-up.Offset))
		if _, err := f.ReadAt(buf[:n], up.Offset); err != nil {
			return fmt.Errorf("site %s, image %s: read the content at %d: %w", sy.Site, sy.Image, up.Offset, err)
		}
		next, err := si.UploadImageChunk(ctx, up, buf[:n])
		if err != nil {
			if up, err = e.chunkFailed(ctx, si, sy, ref, up, err, &failures); err != nil {
				return err
			}
			continue
		}
		failures, up = 0, next
		sy.Offset = up.Offset
		if err := e.saveImageSync(ctx, sy, "", ""); err != nil {
			return err
		}
		if pct := int(sy.Progress()) / imageEventStep; pct != lastPct && !up.Complete {
			lastPct = pct
			e.imageEvent(sy, "info", "site %s, image %s: %d of %d bytes uploaded (%.0f%%)", sy.Site, sy.Image, sy.Offset, ref.Size, sy.Progress())
		}
	}
	return nil
}

// awaitCopies waits, once the provisioner holds every byte, until it
// says the image complete: MAAS with several region controllers says so
// only once the others copied the verified content. It asks again with
// backoff, bounded by the images stage's timeout (ctx).
func (e *Engine) awaitCopies(ctx context.Context, si drivers.ServerImages, sy *record.ImageSync, ref drivers.ImageRef, up drivers.ImageUpload) error {
	e.imageEvent(sy, "info", "site %s, image %s: all %d bytes are in the provisioner, verified; copying to the region controllers", sy.Site, sy.Image, ref.Size)
	for attempt := 1; !up.Complete; attempt++ {
		wait := min(e.scaled(min(time.Duration(attempt)*2*time.Second, 30*time.Second)), e.cfg.MaxWait)
		if !sleep(ctx, wait) {
			return fmt.Errorf("site %s, image %s: the provisioner holds all %d bytes but did not say the image complete within lifecycle.timeouts.images (%s; its region controllers still copying it? look at boot resource %s, then sync again): %w",
				sy.Site, sy.Image, ref.Size, e.timeout(record.StageImages), up.ResourceID, ctx.Err())
		}
		next, err := e.startUpload(ctx, si, sy, ref)
		if err != nil {
			return err
		}
		if next.Offset < ref.Size && !next.Complete {
			return fmt.Errorf("site %s, image %s: the provisioner held all %d bytes, then %d (boot resource %s, file %s): its copy was lost; sync again to upload a fresh version",
				sy.Site, sy.Image, ref.Size, next.Offset, next.ResourceID, next.FileID)
		}
		up = next
	}
	return nil
}

// abandon gives up a refused (or superseded) upload and says what the provisioner did
// with it, from its own list afterwards: the image deleted (its only
// version was this upload), or kept because an older version stays in
// service (the refused version is never resumed: the next sync uploads
// a fresh one from zero).
func (e *Engine) abandon(ctx context.Context, si drivers.ServerImages, sy *record.ImageSync, ref drivers.ImageRef, up drivers.ImageUpload, what string) string {
	err := e.imageCall(ctx, sy, "abandon the "+what+" upload", func(ctx context.Context) error { return si.AbandonImageUpload(ctx, up) })
	if err != nil {
		return fmt.Sprintf("abandoning the %s version failed too (%v): look at boot resource %s (delete it by hand when no version of it is in service)", what, err, up.ResourceID)
	}
	lctx, cancel := context.WithTimeout(ctx, imageListTimeout)
	defer cancel()
	list, err := si.Images(lctx)
	if err != nil {
		return fmt.Sprintf("the %s version was abandoned (the provisioner's images could not be read afterwards: %v)", what, err)
	}
	for _, p := range list {
		if p.ID == up.ResourceID && p.Name == ref.Name {
			return fmt.Sprintf("boot resource %s was kept, as an older version of it stays in service: the %s version is left unused and the next sync uploads a fresh version from zero", up.ResourceID, what)
		}
	}
	return fmt.Sprintf("boot resource %s, whose only version was this upload, was deleted: nothing half-made is left", up.ResourceID)
}

// imageListTimeout bounds one read of a provisioner's images.
const imageListTimeout = 30 * time.Second

// chunkFailed handles a chunk's error: a refused checksum, or another
// permanent refusal (MAAS's size bound), abandons the upload (nothing
// half-made is resumed and refused again); a transient one waits
// (bounded) and asks the provisioner for its offset again.
func (e *Engine) chunkFailed(ctx context.Context, si drivers.ServerImages, sy *record.ImageSync, ref drivers.ImageRef, up drivers.ImageUpload, err error, failures *int) (drivers.ImageUpload, error) {
	if errors.Is(err, drivers.ErrImageChecksum) {
		left := e.abandon(context.WithoutCancel(ctx), si, sy, ref, up, "refused")
		sy.ResourceID, sy.FileID, sy.Offset = "", "", 0
		return up, fmt.Errorf("site %s, image %s: the provisioner refused the uploaded content: %w; %s; the previous image stays in service (check the image file and its sha256)", sy.Site, sy.Image, err, left)
	}
	if ctx.Err() == nil && drivers.Classify(err) == drivers.Permanent {
		left := e.abandon(context.WithoutCancel(ctx), si, sy, ref, up, "refused")
		sy.ResourceID, sy.FileID, sy.Offset = "", "", 0
		return up, fmt.Errorf("site %s, image %s: the provisioner refused the chunk at %d of %d bytes: %w; %s; the previous image stays in service (check its bounds, e.g. MAAS's upload size limit, then sync again)", sy.Site, sy.Image, up.Offset, ref.Size, err, left)
	}
	*failures++
	if ctx.Err() != nil || drivers.Classify(err) != drivers.Transient || *failures >= e.cfg.Retry.Attempts {
		return up, fmt.Errorf("site %s, image %s: upload of the chunk at %d of %d bytes: %w (after %d attempt(s)); a sync later resumes from what the provisioner holds", sy.Site, sy.Image, up.Offset, ref.Size, err, *failures)
	}
	wait := e.scaled(e.cfg.Retry.backoff(*failures))
	e.imageEvent(sy, "warn", "site %s, image %s: the chunk at %d failed (%v): the provisioner is asked for its offset again in %s", sy.Site, sy.Image, up.Offset, err, wait)
	if !sleep(ctx, wait) {
		return up, fmt.Errorf("site %s, image %s: %w", sy.Site, sy.Image, ctx.Err())
	}
	return e.startUpload(ctx, si, sy, ref)
}
