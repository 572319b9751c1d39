package orchestrator_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/firmwarestore"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestImagesOnTheLab: a deploy of nodes in two Sites whose profile names
// a custom image (two nodes of each) uploads it, through the MAAS driver, into both Sites'
// MAAS regions (each region counts one create and every byte once, and
// holds the image complete with its SHA-256), and every machine is
// deployed with it, as the lab's machines say.
func TestImagesOnTheLab(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d, err := labrun.GeneratedSites(ctx, t.TempDir(), 42, 2) // racks of 40: r0000 in the first Site, r0001 in the second

	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	content := imgContent()
	if err := os.WriteFile(filepath.Join(dir, "gpu-golden.ddraw"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	d.Images = map[string]*design.Image{"gpu-golden": {Metadata: design.ObjectMeta{Name: "gpu-golden"}, Spec: design.ImageSpec{
		Architecture: "amd64/generic", Custom: &design.CustomImage{Source: design.FirmwareImage{File: "gpu-golden.ddraw", SHA256: sumHex(content)},
			Format: "ddraw", Size: imgSize, BaseImage: "ubuntu/jammy", Title: "GPU golden"}}}}
	nodes := []string{"n000000", "n000001", "n000040", "n000041"} // two of each Site
	for _, n := range nodes {
		d.Nodes[n].Spec.Platform.Image = "gpu-golden"
	}
	fw, err := firmwarestore.New(firmwarestore.Config{Dir: dir, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { c.Images = fw })
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(nodes...)}, record.TaskSucceeded)
	regions := env.Lab.Regions()
	if len(regions) != 2 {
		t.Fatalf("%d regions, want 2", len(regions))
	}
	for _, r := range regions {
		st := r.MAAS.ImageStats()
		complete := 0
		for _, b := range r.MAAS.BootResources() {
			if b.Type == "Uploaded" && b.Complete && b.SHA256 == sumHex(content) && b.Size == imgSize {
				complete++
			}
		}
		if st.Creates != 1 || st.BytesReceived != imgSize || st.ChecksumRefused != 0 || complete != 1 {
			t.Errorf("site %s's MAAS: %+v, %d complete uploaded image(s) of the content: want one create, %d bytes once", r.Site, st, complete, imgSize)
		}
	}
	deployed := env.Lab.DeployedImages()
	for _, name := range nodes {
		if img := deployed[name]; img.Name() != "custom/gpu-golden" || img.SHA256 != sumHex(content) {
			t.Errorf("%s runs %q (%s), want custom/gpu-golden (%s)", name, img.Name(), img.SHA256, sumHex(content))
		}
	}
}
