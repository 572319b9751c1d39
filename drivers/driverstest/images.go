package driverstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// ImagesLab is a provisioner for the images suite (drivers.ServerImages):
// the suite reads each outcome from it, never from the driver alone.
type ImagesLab struct {
	Driver drivers.ServerImages
	// Custom names a custom image the provisioner does not have
	// (Name custom/<name>, Architecture, Format, BaseImage, Title); the
	// suite sets its SHA-256 and size from the content it uploads.
	Custom drivers.ImageRef
	// Standard is a standard image the boot source offers and the
	// provisioner has not imported.
	Standard drivers.ImageRef
	// State is the provisioner's own view of an image by name (as in
	// ImageRef.Name) and architecture.
	State func(name, arch string) ImageState
	// Secrets must appear in no error (the provisioner's API key).
	Secrets []string
	// CompletesLater: the provisioner keeps a verified upload incomplete
	// for a while after its last byte (several region controllers copy
	// it): the last chunk's answer is Offset == Size and not Complete, and
	// StartImageUpload is polled until Complete. False: complete at once.
	CompletesLater bool
}

// ImageState is an image as the provisioner keeps it.
type ImageState struct {
	Exists   bool
	Complete bool   // a version is complete (deployable)
	SHA256   string // of the newest complete version
	Held     int64  // bytes held of the newest version
	Versions int    // versions (sets) of the image
}

// RunImages runs the images conformance suite: an upload from offset 0 to
// complete, found complete at once the next time; an upload abandoned
// mid-way resumed from the offset the provisioner reports; content that
// does not match its SHA-256 refused with ErrImageChecksum and nothing
// usable left, the abandon removing it; a new version abandoned mid-way
// leaves the previous one in service; a standard image imported. open is
// called once per subtest with a fresh provisioner.
func RunImages(t *testing.T, open func(t *testing.T) ImagesLab) {
	t.Helper()
	for name, f := range map[string]func(*testing.T, ImagesLab){
		"UploadFromZero":         imagesUploadFromZero,
		"ResumeAfterAbandon":     imagesResume,
		"ChecksumRefused":        imagesChecksumRefused,
		"PreviousStaysInService": imagesPreviousStays,
		"StandardImport":         imagesImport,
		"CancelledContext":       imagesCancelled,
		"Rollback":               imagesRollback,
		"RefusedNeverResumed":    imagesRefusedNeverResumed,
		"CompletesWhenSynced":    imagesCompletesWhenSynced,
	} {
		t.Run(name, func(t *testing.T) { f(t, open(t)) })
	}
}

// imageContent is n bytes of deterministic content (seeded) and its
// SHA-256.
func imageContent(n int, seed byte) ([]byte, string) {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// suiteImageSize is two whole chunks and a part: a resume starts past a
// whole chunk and the last chunk is short, as real images' are.
const suiteImageSize = 2*drivers.ImageChunkSize + 123_457

func customRef(l ImagesLab, content []byte, sum string) drivers.ImageRef {
	r := l.Custom
	r.SHA256, r.Size = sum, int64(len(content))
	return r
}

func startUpload(t *testing.T, l ImagesLab, ref drivers.ImageRef) drivers.ImageUpload {
	t.Helper()
	ctx, cancel := ctxFor()
	defer cancel()
	up, err := l.Driver.StartImageUpload(ctx, ref)
	newChecker(realT{t}, l.Secrets...).checkErr("StartImageUpload", err)
	if err != nil {
		t.Fatalf("StartImageUpload %s: %v", ref.Name, err)
	}
	if up.Size != ref.Size || up.ResourceID == "" || up.FileID == "" && !up.Complete {
		t.Fatalf("StartImageUpload %s: %+v (want the size %d and the IDs)", ref.Name, up, ref.Size)
	}
	if up.Offset < 0 || up.Offset > up.Size || up.Offset%drivers.ImageChunkSize != 0 && up.Offset != up.Size {
		t.Fatalf("StartImageUpload %s: offset %d is not a whole number of chunks within the size %d", ref.Name, up.Offset, up.Size)
	}
	uploads.Store(fmt.Sprintf("%p/%s/%d", l.Driver, up.ResourceID, up.Size), ref)
	return up
}

// sendChunks sends the content from up.Offset, at most n chunks (0: all),
// and returns the upload as the driver last answered it.
func sendChunks(t *testing.T, l ImagesLab, up drivers.ImageUpload, content []byte, n int) drivers.ImageUpload {
	t.Helper()
	for i := 0; up.Offset < int64(len(content)) && (n == 0 || i < n); i++ {
		end := min(up.Offset+drivers.ImageChunkSize, int64(len(content)))
		ctx, cancel := ctxFor()
		next, err := l.Driver.UploadImageChunk(ctx, up, content[up.Offset:end])
		cancel()
		newChecker(realT{t}, l.Secrets...).checkErr("UploadImageChunk", err)
		if err != nil {
			t.Fatalf("UploadImageChunk at %d: %v", up.Offset, err)
		}
		if next.Offset != end {
			t.Fatalf("UploadImageChunk at %d: the provisioner holds %d, want %d", up.Offset, next.Offset, end)
		}
		up = next
	}
	if up.Offset == up.Size && !up.Complete {
		up = awaitComplete(t, l, up)
	}
	return up
}

// awaitComplete polls StartImageUpload (bounded) until the provisioner
// says the whole upload is complete; meanwhile no new version is made.
func awaitComplete(t *testing.T, l ImagesLab, up drivers.ImageUpload) drivers.ImageUpload {
	t.Helper()
	if !l.CompletesLater {
		t.Fatalf("after the last chunk: %+v, want complete (this provisioner completes at once)", up)
	}
	for range 400 {
		ctx, cancel := ctxFor()
		next, err := l.Driver.StartImageUpload(ctx, refOfUpload(l, up))
		cancel()
		if err != nil {
			t.Fatalf("StartImageUpload while the upload completes: %v", err)
		}
		if next.ResourceID != up.ResourceID || next.Offset != up.Size {
			t.Fatalf("StartImageUpload while the upload completes: %+v, want the same upload at %d", next, up.Size)
		}
		if next.Complete {
			return next
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("the upload %+v never completed", up)
	return up
}

func imagesUploadFromZero(t *testing.T, l ImagesLab) {
	content, sum := imageContent(suiteImageSize, 1)
	ref := customRef(l, content, sum)
	up := startUpload(t, l, ref)
	if up.Offset != 0 || up.Complete {
		t.Fatalf("a new upload: %+v, want offset 0, not complete", up)
	}
	if st := l.State(ref.Name, ref.Architecture); st.Complete {
		t.Fatalf("before any content the provisioner has %s complete: %+v", ref.Name, st)
	}
	up = sendChunks(t, l, up, content, 0)
	if !up.Complete {
		t.Fatalf("after the last chunk: %+v, want complete", up)
	}
	if st := l.State(ref.Name, ref.Architecture); !st.Complete || st.SHA256 != sum {
		t.Fatalf("the provisioner has %+v, want complete with SHA-256 %s", st, sum)
	}
	again := startUpload(t, l, ref)
	if !again.Complete || again.Offset != again.Size {
		t.Errorf("StartImageUpload of content already there: %+v, want complete at once", again)
	}
	imagesListed(t, l, ref, sum)
}

// imagesListed checks that Images lists the image complete with its
// SHA-256.
func imagesListed(t *testing.T, l ImagesLab, ref drivers.ImageRef, sum string) {
	t.Helper()
	ctx, cancel := ctxFor()
	defer cancel()
	imgs, err := l.Driver.Images(ctx)
	newChecker(realT{t}, l.Secrets...).checkErr("Images", err)
	if err != nil {
		t.Fatalf("Images: %v", err)
	}
	for _, im := range imgs {
		if im.Name == ref.Name && im.Architecture == ref.Architecture {
			if !im.Complete || !im.Custom || im.SHA256 != sum || im.Size != ref.Size {
				t.Errorf("Images lists %+v, want custom, complete, SHA-256 %s, size %d", im, sum, ref.Size)
			}
			return
		}
	}
	t.Errorf("Images does not list %s (%s): %+v", ref.Name, ref.Architecture, imgs)
}

func imagesResume(t *testing.T, l ImagesLab) {
	content, sum := imageContent(suiteImageSize, 2)
	ref := customRef(l, content, sum)
	sendChunks(t, l, startUpload(t, l, ref), content, 1) // the loop dies here
	if st := l.State(ref.Name, ref.Architecture); st.Held != drivers.ImageChunkSize || st.Complete {
		t.Fatalf("after one chunk the provisioner has %+v, want %d bytes held, not complete", st, drivers.ImageChunkSize)
	}
	up := startUpload(t, l, ref)
	if up.Offset != drivers.ImageChunkSize || up.Complete {
		t.Fatalf("the resumed upload: %+v, want offset %d (what the provisioner holds)", up, drivers.ImageChunkSize)
	}
	if up = sendChunks(t, l, up, content, 0); !up.Complete {
		t.Fatalf("after the last chunk: %+v, want complete", up)
	}
	if st := l.State(ref.Name, ref.Architecture); !st.Complete || st.SHA256 != sum {
		t.Fatalf("the provisioner has %+v, want complete with SHA-256 %s", st, sum)
	}
}

func imagesChecksumRefused(t *testing.T, l ImagesLab) {
	content, sum := imageContent(suiteImageSize, 3)
	ref := customRef(l, content, sum)
	bad := bytes.Clone(content)
	bad[len(bad)-1] ^= 0xff
	up := sendChunks(t, l, startUpload(t, l, ref), bad, 2)
	ctx, cancel := ctxFor()
	defer cancel()
	_, err := l.Driver.UploadImageChunk(ctx, up, bad[up.Offset:])
	newChecker(realT{t}, l.Secrets...).checkErr("UploadImageChunk (the last, not matching)", err)
	if !errors.Is(err, drivers.ErrImageChecksum) || drivers.Classify(err) != drivers.Permanent {
		t.Fatalf("the last chunk of content not matching its SHA-256: %v, want a Permanent error wrapping ErrImageChecksum", err)
	}
	if st := l.State(ref.Name, ref.Architecture); st.Complete {
		t.Fatalf("after a refused checksum the provisioner has %+v complete", st)
	}
	if err := l.Driver.AbandonImageUpload(ctx, up); err != nil {
		t.Fatalf("AbandonImageUpload: %v", err)
	}
	if st := l.State(ref.Name, ref.Architecture); st.Exists {
		t.Errorf("after AbandonImageUpload the provisioner still has %+v", st)
	}
}

func imagesPreviousStays(t *testing.T, l ImagesLab) {
	v1, sum1 := imageContent(suiteImageSize, 4)
	ref1 := customRef(l, v1, sum1)
	if up := sendChunks(t, l, startUpload(t, l, ref1), v1, 0); !up.Complete {
		t.Fatalf("version 1: %+v, want complete", up)
	}
	v2, sum2 := imageContent(suiteImageSize, 5)
	ref2 := customRef(l, v2, sum2)
	up := startUpload(t, l, ref2)
	if up.Offset != 0 || up.Complete {
		t.Fatalf("version 2 (new content): %+v, want offset 0", up)
	}
	up = sendChunks(t, l, up, v2, 1)
	if st := l.State(ref1.Name, ref1.Architecture); !st.Complete || st.SHA256 != sum1 {
		t.Fatalf("while version 2 uploads the provisioner has %+v, want version 1 (%s) in service", st, sum1)
	}
	ctx, cancel := ctxFor()
	defer cancel()
	if err := l.Driver.AbandonImageUpload(ctx, up); err != nil {
		t.Fatalf("AbandonImageUpload of version 2: %v", err)
	}
	if st := l.State(ref1.Name, ref1.Architecture); !st.Complete || st.SHA256 != sum1 {
		t.Errorf("after version 2 was abandoned the provisioner has %+v, want version 1 (%s) in service", st, sum1)
	}
}

func imagesImport(t *testing.T, l ImagesLab) {
	ref := l.Standard
	if st := l.State(ref.Name, ref.Architecture); st.Complete {
		t.Fatalf("the provisioner has %s (%s) already: %+v; give the suite one it lacks", ref.Name, ref.Architecture, st)
	}
	c := newChecker(realT{t}, l.Secrets...)
	c.mustPoll("ImportImage "+ref.Name, func(ctx context.Context) (drivers.Result, error) { return l.Driver.ImportImage(ctx, ref) })
	if st := l.State(ref.Name, ref.Architecture); !st.Complete {
		t.Errorf("after ImportImage was Done the provisioner has %+v, want %s complete", st, ref.Name)
	}
	c.done("ImportImage again", func(ctx context.Context) (drivers.Result, error) { return l.Driver.ImportImage(ctx, ref) })
}

func imagesCancelled(t *testing.T, l ImagesLab) {
	content, sum := imageContent(drivers.ImageChunkSize, 6)
	ref := customRef(l, content, sum)
	up := drivers.ImageUpload{ResourceID: "1", FileID: "1", Size: ref.Size}
	calls := []ctxCall{
		{name: "Images", call: func(ctx context.Context) (drivers.Result, error) {
			_, err := l.Driver.Images(ctx)
			return noResult(err)
		}},
		{name: "ImportImage", call: func(ctx context.Context) (drivers.Result, error) { return l.Driver.ImportImage(ctx, l.Standard) }},
		{name: "StartImageUpload", call: func(ctx context.Context) (drivers.Result, error) {
			_, err := l.Driver.StartImageUpload(ctx, ref)
			return noResult(err)
		}},
		{name: "UploadImageChunk", call: func(ctx context.Context) (drivers.Result, error) {
			_, err := l.Driver.UploadImageChunk(ctx, up, content)
			return noResult(err)
		}},
		{name: "AbandonImageUpload", call: func(ctx context.Context) (drivers.Result, error) {
			return noResult(l.Driver.AbandonImageUpload(ctx, up))
		}},
	}
	c := newChecker(realT{t}, l.Secrets...)
	for _, m := range calls {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		c.doneCtx(ctx, m, "a cancelled context", context.Canceled)
	}
	if st := l.State(ref.Name, ref.Architecture); st.Exists {
		t.Errorf("calls with a cancelled context made %s: %+v", ref.Name, st)
	}
}

// uploads remembers each upload's ImageRef, for awaitComplete.
var uploads sync.Map // resourceID/size -> drivers.ImageRef

func refOfUpload(l ImagesLab, up drivers.ImageUpload) drivers.ImageRef {
	if r, ok := uploads.Load(fmt.Sprintf("%p/%s/%d", l.Driver, up.ResourceID, up.Size)); ok {
		return r.(drivers.ImageRef)
	}
	return l.Custom
}

// uploadWhole uploads content from StartImageUpload to complete.
func uploadWhole(t *testing.T, l ImagesLab, content []byte, sum string) drivers.ImageRef {
	t.Helper()
	ref := customRef(l, content, sum)
	if up := sendChunks(t, l, startUpload(t, l, ref), content, 0); !up.Complete {
		t.Fatalf("upload of %s: %+v, want complete", sum, up)
	}
	return ref
}

// imagesRollback: going back to older content (v1 after v2) is not
// complete at once (the provisioner deploys its newest complete version,
// v2): a new version is uploaded and then carries v1.
func imagesRollback(t *testing.T, l ImagesLab) {
	v1, sum1 := imageContent(suiteImageSize, 7)
	v2, sum2 := imageContent(suiteImageSize, 8)
	ref1 := uploadWhole(t, l, v1, sum1)
	uploadWhole(t, l, v2, sum2)
	if st := l.State(ref1.Name, ref1.Architecture); st.SHA256 != sum2 {
		t.Fatalf("after v2 the provisioner deploys %s, want v2 %s", st.SHA256, sum2)
	}
	up := startUpload(t, l, ref1)
	if up.Complete || up.Offset != 0 {
		t.Fatalf("StartImageUpload of v1 after v2: %+v, want a new version at 0", up)
	}
	sendChunks(t, l, up, v1, 0)
	if st := l.State(ref1.Name, ref1.Architecture); !st.Complete || st.SHA256 != sum1 || st.Versions != 3 {
		t.Errorf("after the rollback the provisioner has %+v, want v1 %s deployed, 3 versions", st, sum1)
	}
}

// imagesRefusedNeverResumed: v1 in service; v2's content is refused
// (a spoilt chunk), and a sync that resumes it without the abandon is
// refused again (the provisioner keeps the spoilt bytes); after
// AbandonImageUpload the next sync of v2 starts at 0 and completes, v1
// in service all along.
func imagesRefusedNeverResumed(t *testing.T, l ImagesLab) {
	v1, sum1 := imageContent(suiteImageSize, 9)
	ref1 := uploadWhole(t, l, v1, sum1)
	v2, sum2 := imageContent(suiteImageSize, 10)
	ref2 := customRef(l, v2, sum2)
	bad := bytes.Clone(v2)
	bad[10] ^= 0xff // the first chunk is spoilt
	for try := range 2 {
		up := startUpload(t, l, ref2)
		if try == 1 && up.Offset != 2*drivers.ImageChunkSize {
			t.Fatalf("a sync after a refusal without the abandon resumes at %d, want %d (the provisioner holds it)", up.Offset, 2*drivers.ImageChunkSize)
		}
		if up.Offset == 0 {
			up = sendChunks(t, l, up, bad, 2)
		}
		ctx, cancel := ctxFor()
		_, err := l.Driver.UploadImageChunk(ctx, up, v2[up.Offset:])
		cancel()
		if !errors.Is(err, drivers.ErrImageChecksum) {
			t.Fatalf("try %d: the last chunk after a spoilt one: %v, want ErrImageChecksum", try, err)
		}
		bad = v2 // the right content from now on
	}
	ctx, cancel := ctxFor()
	defer cancel()
	up := startUpload(t, l, ref2)
	if err := l.Driver.AbandonImageUpload(ctx, up); err != nil {
		t.Fatalf("AbandonImageUpload: %v", err)
	}
	if st := l.State(ref1.Name, ref1.Architecture); !st.Complete || st.SHA256 != sum1 {
		t.Fatalf("after the abandon the provisioner has %+v, want v1 %s in service", st, sum1)
	}
	up = startUpload(t, l, ref2)
	if up.Offset != 0 || up.Complete {
		t.Fatalf("the sync after the abandon: %+v, want a fresh version at 0", up)
	}
	sendChunks(t, l, up, v2, 0)
	if st := l.State(ref2.Name, ref2.Architecture); !st.Complete || st.SHA256 != sum2 {
		t.Errorf("the provisioner has %+v, want v2 %s", st, sum2)
	}
}

// imagesCompletesWhenSynced: after the last chunk the upload is complete
// only when the provisioner says so; with CompletesLater the answer is
// Offset == Size, not complete, the provisioner's own state agrees, and
// StartImageUpload is complete once it is (one version made).
func imagesCompletesWhenSynced(t *testing.T, l ImagesLab) {
	content, sum := imageContent(suiteImageSize, 11)
	ref := customRef(l, content, sum)
	up := startUpload(t, l, ref)
	up = sendChunks(t, l, up, content, 2)
	ctx, cancel := ctxFor()
	defer cancel()
	last, err := l.Driver.UploadImageChunk(ctx, up, content[up.Offset:])
	if err != nil || last.Offset != last.Size {
		t.Fatalf("the last chunk: %+v %v", last, err)
	}
	st := l.State(ref.Name, ref.Architecture)
	if last.Complete != st.Complete || last.Complete == l.CompletesLater {
		t.Fatalf("after the last chunk the driver says complete=%v, the provisioner %+v (completes later: %v)", last.Complete, st, l.CompletesLater)
	}
	if !last.Complete {
		awaitComplete(t, l, last)
	}
	if st := l.State(ref.Name, ref.Architecture); !st.Complete || st.SHA256 != sum || st.Versions != 1 {
		t.Errorf("the provisioner has %+v, want complete with %s, one version", st, sum)
	}
}
