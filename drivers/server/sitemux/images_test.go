package sitemux

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
)

// A Site's images are reached through the multiplexer (drivers.ImagesAt):
// an upload goes to that Site's provisioner only; a Site without an
// endpoint or whose driver manages no images is a Permanent error naming
// it.
func TestSiteImagesRouteToTheSite(t *testing.T) {
	a, b := fake.NewServer(fake.Script{}), fake.NewServer(fake.Script{})
	s, err := New(map[string]Site{"a": {Driver: a}, "b": {Driver: b}, "c": {Driver: Unbound{Site: "c"}},
		"d": {Driver: &stub{name: "d"}}}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	im, err := drivers.ImagesAt(ctx, s, "b")
	if err != nil {
		t.Fatal(err)
	}
	content := []byte("a small image")
	sum := sha256.Sum256(content)
	ref := drivers.ImageRef{Name: "custom/x", Architecture: "amd64/generic", SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content))}
	up, err := im.StartImageUpload(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if up, err = im.UploadImageChunk(ctx, up, content); err != nil || !up.Complete {
		t.Fatalf("upload: %+v %v", up, err)
	}
	if st := b.ImageStats(); st.Creates != 1 || st.BytesReceived != int64(len(content)) {
		t.Errorf("site b's provisioner counted %+v", st)
	}
	if st := a.ImageStats(); st.Creates != 0 || st.Chunks != 0 {
		t.Errorf("site a's provisioner counted %+v: the upload went to the wrong site", st)
	}
	for _, site := range []string{"c", "d", "nope"} {
		if _, err := drivers.ImagesAt(ctx, s, site); drivers.Classify(err) != drivers.Permanent {
			t.Errorf("site %s: %v, want a Permanent error", site, err)
		}
	}
}
