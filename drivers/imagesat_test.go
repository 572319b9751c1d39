package drivers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
)

// noImages is a server driver that does not manage images.
type noImages struct{ drivers.Server }

// TestImagesAt: a driver that manages images is its own; one that does
// not, or none, is a Permanent error naming the Site.
func TestImagesAt(t *testing.T) {
	ctx := context.Background()
	f := fake.NewServer(fake.Script{})
	if im, err := drivers.ImagesAt(ctx, f, "site-1"); err != nil || im != drivers.ServerImages(f) {
		t.Errorf("the fake: %v %v", im, err)
	}
	for _, srv := range []drivers.Server{noImages{}, nil} {
		_, err := drivers.ImagesAt(ctx, srv, "site-1")
		if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "site-1") {
			t.Errorf("%T: %v, want a Permanent error naming site-1", srv, err)
		}
	}
}
