package orchestrator_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/firmwarestore"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/lab"
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

// TestImageSyncAcrossRegionsOnTheLab: the lab's MAAS has three region
// controllers, which copy an uploaded image 600 ms (scaled) after its
// last byte; MAAS says it complete only then. The engine's sync, through
// the MAAS driver, waits for that and ends synced; from the lab's MAAS:
// one version, complete with the content's SHA-256, every byte received
// once.
func TestImageSyncAcrossRegionsOnTheLab(t *testing.T) {
	t.Parallel()
	l, err := lab.Start(t.Context(), lab.Config{TimeScale: 0.001, RegionControllers: 3, RegionSync: 600 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	info := l.Info()
	srv, err := maasdrv.New(drivers.Config{Settings: map[string]string{maasdrv.SettingURL: info.MAASURL, maasdrv.SettingTimeout: "20s"},
		Secrets: map[string]drivers.Secret{maasdrv.SecretAPIKey: drivers.NewSecret(info.APIKey)}})
	if err != nil {
		t.Fatal(err)
	}
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	env.cfg.Drivers.Server = srv
	e := env.engine(t)
	task := runTask(t, e, record.Request{Action: record.ActionSyncImages})
	if task.Status != record.TaskSucceeded {
		t.Fatalf("sync: %s: %s", task.Status, task.Message)
	}
	complete := 0
	for _, b := range l.MAAS.BootResources() {
		if b.Type == "Uploaded" && b.Complete && b.SHA256 == imgSum() && b.Size == imgSize {
			complete++
		}
	}
	if st := l.MAAS.ImageStats(); st.Creates != 1 || st.BytesReceived != imgSize || st.ChecksumRefused != 0 || complete != 1 {
		t.Fatalf("the lab's MAAS: %+v, %d complete image(s) of the content: want one create, %d bytes once", st, complete, imgSize)
	}
}
