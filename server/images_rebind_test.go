package server

import (
	"context"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
)

// serve's rebinding leaves the images of the driver there is now
// reachable (drivers.ImagesAt); before any design, it says why not.
func TestRebindingForwardsImages(t *testing.T) {
	f := fake.NewServer(fake.Script{})
	r := &rebinding{cur: f, every: time.Hour, checked: time.Now()}
	im, err := drivers.ImagesAt(context.Background(), r, "site-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := im.Images(context.Background()); err != nil || len(f.Calls()) != 1 {
		t.Fatalf("Images: %v, the fake saw %+v", err, f.Calls())
	}
	if _, err := drivers.ImagesAt(context.Background(), noDesign{}, "site-1"); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("no design: %v, want Permanent", err)
	}
}
