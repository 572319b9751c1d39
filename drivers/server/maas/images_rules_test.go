package maas

import (
	"errors"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/lab"
)

// sendAll sends the content from up.Offset to its end, chunk by chunk,
// and returns the upload as the driver last answered it.
func sendAll(t *testing.T, d *Driver, up drivers.ImageUpload, content []byte) (drivers.ImageUpload, error) {
	t.Helper()
	ctx := testCtx(t)
	var err error
	for up.Offset < up.Size && err == nil {
		end := min(up.Offset+drivers.ImageChunkSize, up.Size)
		up, err = d.UploadImageChunk(ctx, up, content[up.Offset:end])
	}
	return up, err
}

// TestPoisonedVersionNotResumed (R1 #1): a chunk sent twice poisons a
// new version while an older one is complete; the sync that resumes it is
// refused (MAAS's checksum), and after AbandonImageUpload the next sync
// of the right content starts a new version at 0 and completes: the lab's
// newest complete version has the content's SHA-256. Before the fix every
// later sync resumed the poisoned file and was refused again.
func TestPoisonedVersionNotResumed(t *testing.T) {
	l := startLab(t, lab.Config{})
	d := newTestDriver(t, l, nil)
	v1, ref1 := testImage(drivers.ImageChunkSize + 5)
	uploadAll(t, d, ref1, v1)
	v2, ref2 := testImage(3*drivers.ImageChunkSize + 7)
	ctx := testCtx(t)
	up, err := d.StartImageUpload(ctx, ref2)
	if err != nil {
		t.Fatal(err)
	}
	if up, err = d.UploadImageChunk(ctx, up, v2[:drivers.ImageChunkSize]); err != nil {
		t.Fatal(err)
	}
	dup := up
	dup.Offset = 0 // the same chunk again: MAAS appends it a second time
	_, _ = d.UploadImageChunk(ctx, dup, v2[:drivers.ImageChunkSize])
	refused := 0
	for attempt := 1; attempt <= 3; attempt++ {
		up, err := d.StartImageUpload(ctx, ref2)
		if err != nil {
			t.Fatal(err)
		}
		if refused > 0 && up.Offset != 0 {
			t.Fatalf("attempt %d after a refusal resumes at %d: the refused file is resumed", attempt, up.Offset)
		}
		if _, err = sendAll(t, d, up, v2); err == nil {
			break
		}
		if !errors.Is(err, drivers.ErrImageChecksum) {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		refused++
		if aerr := d.AbandonImageUpload(ctx, up); aerr != nil {
			t.Fatal(aerr)
		}
	}
	if refused != 1 {
		t.Errorf("%d syncs of the right content were refused, want 1 (the one that resumed the poisoned file)", refused)
	}
	if s := labImageState(t, l, ref2.Name, ref2.Architecture); !s.Complete || s.SHA256 != ref2.SHA256 {
		t.Errorf("the lab deploys %s, want %s (lab: %+v)", s.SHA256, ref2.SHA256, l.MAAS.BootResources())
	}
}

// TestRollbackUploadsNewVersion (R1 #2): going back to older content (v1
// after v2) is not Complete at once: MAAS deploys the newest complete
// version (v2); the upload makes a new version with v1's content and the
// lab's newest complete version then has v1's SHA-256.
func TestRollbackUploadsNewVersion(t *testing.T) {
	l := startLab(t, lab.Config{})
	d := newTestDriver(t, l, nil)
	v1, ref1 := testImage(drivers.ImageChunkSize + 5)
	uploadAll(t, d, ref1, v1)
	v2, ref2 := testImage(drivers.ImageChunkSize + 6)
	uploadAll(t, d, ref2, v2)
	up, err := d.StartImageUpload(testCtx(t), ref1)
	if err != nil {
		t.Fatal(err)
	}
	if up.Complete || up.Offset != 0 {
		t.Fatalf("StartImageUpload of v1 after v2: %+v, want a new version at 0 (MAAS deploys v2)", up)
	}
	if up, err = sendAll(t, d, up, v1); err != nil || !up.Complete {
		t.Fatalf("the rollback's upload: %+v %v", up, err)
	}
	if s := labImageState(t, l, ref1.Name, ref1.Architecture); s.SHA256 != ref1.SHA256 {
		t.Errorf("after the rollback the lab deploys %s, want v1 %s", s.SHA256, ref1.SHA256)
	}
	if st := l.MAAS.ImageStats(); st.Creates != 3 {
		t.Errorf("the lab counted %d creates, want 3 (v1, v2, v1 again)", st.Creates)
	}
}

// TestAbandonKeepsResourceWithSets (R1 lesser): a resource with more than
// one version is never deleted by AbandonImageUpload, even when none of
// its versions reads complete (on HA with a region down every version
// can read so); the abandoned version is no longer the newest.
func TestAbandonKeepsResourceWithSets(t *testing.T) {
	l := startLab(t, lab.Config{})
	d := newTestDriver(t, l, nil)
	v1, ref1 := testImage(2*drivers.ImageChunkSize + 5)
	ctx := testCtx(t)
	up1, err := d.StartImageUpload(ctx, ref1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = d.UploadImageChunk(ctx, up1, v1[:drivers.ImageChunkSize]); err != nil {
		t.Fatal(err)
	}
	_, ref2 := testImage(2*drivers.ImageChunkSize + 6)
	up2, err := d.StartImageUpload(ctx, ref2)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.AbandonImageUpload(ctx, up2); err != nil {
		t.Fatal(err)
	}
	if st := l.MAAS.ImageStats(); st.Deletes != 0 {
		t.Fatalf("the lab counted %d deletes of a resource with two versions", st.Deletes)
	}
	again, err := d.StartImageUpload(ctx, ref2)
	if err != nil {
		t.Fatal(err)
	}
	if again.FileID == up2.FileID {
		t.Errorf("after the abandon StartImageUpload resumes the abandoned file %s", up2.FileID)
	}
}
