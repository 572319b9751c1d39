package driverstest_test

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/drivers/fake"
)

// fakeImagesLab is the fake provisioner as the images suite's lab: the
// suite counts from its own image state (ImageViews).
func fakeImagesLab(f *fake.Server) driverstest.ImagesLab {
	return driverstest.ImagesLab{
		Driver:   f,
		Custom:   drivers.ImageRef{Name: "custom/suite-golden", Architecture: "amd64/generic", Format: "ddraw", BaseImage: "ubuntu/jammy", Title: "suite"},
		Standard: drivers.ImageRef{Name: "ubuntu/focal", Architecture: "arm64/generic"},
		State: func(name, arch string) driverstest.ImageState {
			for _, v := range f.ImageViews() {
				if v.Name == name && v.Architecture == arch {
					return driverstest.ImageState{Exists: true, Complete: v.Complete, SHA256: v.SHA256, Held: v.Held, Versions: v.Sets}
				}
			}
			return driverstest.ImageState{}
		},
	}
}

func TestFakeImages(t *testing.T) {
	for _, s := range scripts {
		t.Run(s.name, func(t *testing.T) {
			driverstest.RunImages(t, func(*testing.T) driverstest.ImagesLab { return fakeImagesLab(fake.NewServer(s.script)) })
		})
	}
	// Several region controllers: a verified upload completes a few polls
	// later.
	driverstest.RunImages(t, func(*testing.T) driverstest.ImagesLab {
		f := fake.NewServer(fake.Script{})
		f.DelayImageCompletion(3)
		l := fakeImagesLab(f)
		l.CompletesLater = true
		return l
	})
}
