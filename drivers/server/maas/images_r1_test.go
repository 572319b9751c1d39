package maas

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/lab"
)

// R1 repro A: one chunk sent twice mid-file (MAAS and the lab append it
// again: they never refuse a repeat that fits) poisons the version; with an
// older complete version in service, AbandonImageUpload leaves it and every
// later sync of the same content resumes it and is refused again.
func TestR1StickyRefusal(t *testing.T) {
	l := startLab(t, lab.Config{})
	d := newTestDriver(t, l, nil)
	v1, ref1 := testImage(drivers.ImageChunkSize + 5)
	uploadAll(t, d, ref1, v1)
	v2, ref2 := testImage(3*drivers.ImageChunkSize + 7)
	rand.New(rand.NewSource(7)).Read(v2)
	sum := sha256.Sum256(v2)
	ref2.SHA256 = hex.EncodeToString(sum[:])
	ctx := testCtx(t)
	up, err := d.StartImageUpload(ctx, ref2)
	if err != nil {
		t.Fatal(err)
	}
	c0 := v2[:drivers.ImageChunkSize]
	up, err = d.UploadImageChunk(ctx, up, c0)
	if err != nil {
		t.Fatal(err)
	}
	// the same chunk again (a resend whose first copy MAAS had not yet committed)
	dup := up
	dup.Offset = 0
	if _, err := d.UploadImageChunk(ctx, dup, c0); err != nil {
		t.Logf("repeat: %v", err)
	}
	t.Logf("after the repeat the lab holds %+v", l.MAAS.BootResources())
	// a fresh sync of the right content, as the engine does
	for attempt := 1; attempt <= 3; attempt++ {
		up, err := d.StartImageUpload(ctx, ref2)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("attempt %d resumes at %d of %d", attempt, up.Offset, up.Size)
		for up.Offset < up.Size && err == nil {
			end := min(up.Offset+drivers.ImageChunkSize, up.Size)
			up, err = d.UploadImageChunk(ctx, up, v2[up.Offset:end])
		}
		if err == nil {
			t.Logf("attempt %d complete", attempt)
			return
		}
		t.Logf("attempt %d: %v (checksum: %v)", attempt, err, errors.Is(err, drivers.ErrImageChecksum))
		if errors.Is(err, drivers.ErrImageChecksum) {
			if aerr := d.AbandonImageUpload(ctx, up); aerr != nil {
				t.Fatal(aerr)
			}
		}
	}
	t.Errorf("STICKY: three syncs of the right content all failed; lab: %+v", l.MAAS.BootResources())
}

// R1 repro B: going back to an older content (v1 after v2) is reported
// Complete by StartImageUpload, but MAAS deploys the newest complete set (v2).
func TestR1RevertDeploysNewest(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 1})
	d := newTestDriver(t, l, nil)
	v1, ref1 := testImage(drivers.ImageChunkSize + 5)
	uploadAll(t, d, ref1, v1)
	v2, ref2 := testImage(drivers.ImageChunkSize + 6)
	uploadAll(t, d, ref2, v2)
	up, err := d.StartImageUpload(testCtx(t), ref1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("StartImageUpload(v1) after v2: %+v", up)
	if up.Complete {
		img, _ := d.Images(testCtx(t))
		for _, p := range img {
			if p.Name == ref1.Name {
				if p.SHA256 != ref1.SHA256 {
					t.Errorf("REVERT: StartImageUpload says v1 complete, but the version MAAS deploys is %s (v1 is %s)", p.SHA256, ref1.SHA256)
				}
			}
		}
	}
}
