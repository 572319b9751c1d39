package lab

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/sim/maas"
)

// TestRegionControllersConfig: Config.RegionControllers and RegionSync
// reach the Site's MAAS: GET regioncontrollers/ lists them, and an
// uploaded image is complete in the lab's view only RegionSync (scaled)
// after its last byte.
func TestRegionControllersConfig(t *testing.T) {
	l, err := Start(t.Context(), Config{TimeScale: 0.001, RegionControllers: 2, RegionSync: 500 * time.Second}) // 500 ms
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	c := &labMAAS{t: t, base: "http://" + l.ln.Addr().String() + maas.APIPrefix, creds: l.MAAS.APIKey()}
	var regions []map[string]any
	c.must(200, "GET", "/regioncontrollers/", "", nil, &regions)
	if len(regions) != 2 {
		t.Fatalf("regioncontrollers/: %v", regions)
	}
	img := bytes.Repeat([]byte("ha "), 1000)
	sum := sha256.Sum256(img)
	var res struct {
		ID   int `json:"id"`
		Sets map[string]struct {
			Files map[string]struct {
				UploadURI string `json:"upload_uri"`
			} `json:"files"`
		} `json:"sets"`
	}
	c.must(201, "POST", "/boot-resources/", "application/x-www-form-urlencoded", []byte(url.Values{"name": {"custom/ha"},
		"architecture": {"amd64/generic"}, "sha256": {hex.EncodeToString(sum[:])}, "size": {fmt.Sprint(len(img))}, "filetype": {"ddraw"}}.Encode()), &res)
	upload := ""
	for _, st := range res.Sets {
		upload = strings.TrimPrefix(st.Files["root-dd.raw"].UploadURI, maas.APIPrefix)
	}
	start := time.Now()
	c.must(200, "PUT", upload, "application/octet-stream", img, nil)
	view := func() maas.BootResourceView {
		for _, v := range l.MAAS.BootResources() {
			if v.ID == res.ID {
				return v
			}
		}
		t.Fatalf("no resource %d", res.ID)
		return maas.BootResourceView{}
	}
	if v := view(); v.Complete || v.Regions != 1 {
		t.Fatalf("right after the last byte: %+v", v)
	}
	waitFor(t, "the other region's copy", func() bool { return view().Complete })
	if d := time.Since(start); d < 400*time.Millisecond || view().Regions != 2 {
		t.Fatalf("complete after %v (want the 500 ms sync): %+v", d, view())
	}
}
