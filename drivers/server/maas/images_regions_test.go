package maas

import (
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/sim/lab"
)

// regionsLab is a lab whose MAAS has three region controllers; the other
// two copy an upload about 300 ms after its last byte.
func regionsLab(t *testing.T) *lab.Lab {
	return startLab(t, lab.Config{RegionControllers: 3, RegionSync: 600 * time.Second}) // scaled by testTimeScale
}

// TestUploadAcrossRegions (R1 #3): with three region controllers MAAS's
// progress is over every region's copy. A new driver (a restart) resumes
// at what the receiving region holds, not a third of it; after the last
// chunk the upload is not Complete while the lab says the image is not
// complete, and StartImageUpload says Complete once the lab does, with
// one version made and every byte received once.
func TestUploadAcrossRegions(t *testing.T) {
	l := regionsLab(t)
	content, ref := testImage(3*drivers.ImageChunkSize + 9)
	first := newTestDriver(t, l, nil)
	ctx := testCtx(t)
	up, err := first.StartImageUpload(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if up, err = first.UploadImageChunk(ctx, up, content[up.Offset:up.Offset+drivers.ImageChunkSize]); err != nil {
			t.Fatal(err)
		}
	}
	second := newTestDriver(t, l, nil)
	if up, err = second.StartImageUpload(ctx, ref); err != nil || up.Offset != 2*drivers.ImageChunkSize {
		t.Fatalf("resumed upload %+v %v, want offset %d (what the receiving region holds)", up, err, 2*drivers.ImageChunkSize)
	}
	if up, err = sendAll(t, second, up, content); err != nil || up.Offset != up.Size {
		t.Fatalf("the rest: %+v %v", up, err)
	}
	lab := labImageState(t, l, ref.Name, ref.Architecture)
	if up.Complete || lab.Complete {
		t.Fatalf("right after the last chunk the driver says %+v, the lab %+v: want neither complete (the other regions copy it)", up, lab)
	}
	for i := 0; !up.Complete; i++ {
		if i == 200 {
			t.Fatalf("never complete: %+v; lab %+v", up, labImageState(t, l, ref.Name, ref.Architecture))
		}
		time.Sleep(25 * time.Millisecond)
		if up, err = second.StartImageUpload(ctx, ref); err != nil || up.Offset != up.Size {
			t.Fatalf("while the regions copy it: %+v %v, want offset %d", up, err, ref.Size)
		}
	}
	st := l.MAAS.ImageStats()
	if s := labImageState(t, l, ref.Name, ref.Architecture); !s.Complete || s.SHA256 != ref.SHA256 || s.Versions != 1 {
		t.Errorf("the lab has %+v, want complete with %s, one version", s, ref.SHA256)
	}
	if st.Creates != 1 || st.BytesReceived != ref.Size {
		t.Errorf("the lab counted %+v, want one create and %d bytes once", st, ref.Size)
	}
}

// TestImagesConformanceRegions runs the images suite against a lab MAAS
// with three region controllers (an upload completes when the others
// copied it). Not parallel: CompletesWhenSynced reads the lab's state
// after the last chunk within the regions' copy time (0.3 s here), which
// a machine loaded by the parallel tests overran (1 of 3 runs at load 23).
func TestImagesConformanceRegions(t *testing.T) {
	driverstest.RunImages(t, func(t *testing.T) driverstest.ImagesLab {
		l := regionsLab(t)
		d := newTestDriver(t, l, nil)
		return driverstest.ImagesLab{
			Driver:         d,
			Custom:         drivers.ImageRef{Name: "custom/suite-golden", Architecture: "amd64/generic", Format: "ddraw", BaseImage: "ubuntu/jammy", Title: "suite"},
			Standard:       drivers.ImageRef{Name: "ubuntu/focal", Architecture: "arm64/generic"},
			State:          func(name, arch string) driverstest.ImageState { return labImageState(t, l, name, arch) },
			Secrets:        []string{l.Info().APIKey},
			CompletesLater: true,
		}
	})
}
