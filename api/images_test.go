package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/firmwarestore"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/labimage"
)

// TestImagesRoutes: GET /images lists the design's custom image in its
// Site, absent before a sync, with the nodes deploying it; a viewer may
// not sync (403); an operator's POST /images/sync is a sync_images task,
// after which the image is synced (100 %) in the lab's MAAS, as the region
// counts; GET /images/{name} answers it, 404 for an unknown name.
func TestImagesRoutes(t *testing.T) {
	t.Parallel()
	content, err := io.ReadAll(labimage.Reader("api-img", "amd64/generic", 5<<20+17)) // no chunk like another
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "api-img.ddraw"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := firmwarestore.New(firmwarestore.Config{Dir: dir, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var node string
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithDesign(func(d *design.Design) {
		node = d.NodeNames()[0]
		if d.Images == nil {
			d.Images = map[string]*design.Image{}
		}
		d.Images["api-img"] = &design.Image{Metadata: design.ObjectMeta{Name: "api-img"}, Spec: design.ImageSpec{Architecture: "amd64/generic",
			Custom: &design.CustomImage{Source: design.FirmwareImage{File: "api-img.ddraw", SHA256: hex.EncodeToString(sum[:])}, Format: "ddraw", Size: int64(len(content))}}}
		d.Nodes[node].Spec.Platform.Image = "api-img"
	}), apitest.WithTune(func(c *orchestrator.Config) { c.Images = store }))}
	view, op := f.Token[api.RoleViewer], f.Token[api.RoleOperator]
	row := func(list apitypes.Images) apitypes.ImageSite {
		for _, im := range list.Images {
			if im.Image == "api-img" {
				return im
			}
		}
		t.Fatalf("no api-img in %+v", list)
		return apitypes.ImageSite{}
	}
	var list apitypes.Images
	if code := f.json(t, "GET", "/api/v1/images", view, nil, &list); code != http.StatusOK {
		t.Fatalf("GET /images: %d", code)
	}
	if im := row(list); im.State != "absent" || im.Name != "custom/api-img" || len(im.Nodes) != 1 || im.Nodes[0] != node {
		t.Fatalf("before the sync: %+v", im)
	}
	if code := f.json(t, "POST", "/api/v1/images/sync", view, apitypes.ImageSyncRequest{Image: "api-img"}, nil); code != http.StatusForbidden {
		t.Fatalf("a viewer's sync: %d, want 403", code)
	}
	var task apitypes.Task
	if code := f.json(t, "POST", "/api/v1/images/sync", op, apitypes.ImageSyncRequest{Image: "api-img"}, &task); code != http.StatusCreated || task.Action != record.ActionSyncImages {
		t.Fatalf("sync: %d %+v", code, task)
	}
	done, err := f.Engine.Wait(t.Context(), task.ID)
	if err != nil || done.Status != record.TaskSucceeded {
		t.Fatalf("sync task: %+v %v", done, err)
	}
	if code := f.json(t, "GET", "/api/v1/images/api-img", view, nil, &list); code != http.StatusOK {
		t.Fatalf("GET /images/api-img: %d", code)
	}
	if im := row(list); im.State != "synced" || im.Progress != 100 || im.Task != task.ID {
		t.Fatalf("after the sync: %+v", im)
	}
	if st := f.Env.Lab.MAAS.ImageStats(); st.Creates != 1 || st.BytesReceived != int64(len(content)) {
		t.Fatalf("the lab's MAAS counts %+v, want one create and every byte once", st)
	}
	if code := f.json(t, "GET", "/api/v1/images/nope", view, nil, nil); code != http.StatusNotFound {
		t.Fatalf("GET /images/nope: %d, want 404", code)
	}
}

// TestImagesListReadsTheProvisioner: a standard Image document whose
// image the lab's MAAS holds already (ubuntu/jammy, listed by MAAS as
// amd64/ga-22.04) is listed synced, 100 %, though no sync ever ran (the
// lab's MAAS counts no import); the engine has no record of it.
func TestImagesListReadsTheProvisioner(t *testing.T) {
	t.Parallel()
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithDesign(func(d *design.Design) {
		if d.Images == nil {
			d.Images = map[string]*design.Image{}
		}
		d.Images["jammy-std"] = &design.Image{Metadata: design.ObjectMeta{Name: "jammy-std"}, Spec: design.ImageSpec{OS: "ubuntu", Release: "jammy"}}
		d.Nodes[d.NodeNames()[0]].Spec.Platform.Image = "jammy-std"
	}))}
	var list apitypes.Images
	if code := f.json(t, "GET", "/api/v1/images?site=", f.Token[api.RoleViewer], nil, &list); code != http.StatusOK {
		t.Fatalf("GET /images: %d", code)
	}
	found := false
	for _, im := range list.Images {
		if im.Image != "jammy-std" {
			continue
		}
		found = true
		if im.State != "synced" || im.Progress != 100 || im.ProvisionerError != "" || im.Task != "" {
			t.Fatalf("jammy-std: %+v: want synced from the provisioner's own list", im)
		}
	}
	if !found {
		t.Fatalf("no jammy-std in %+v", list)
	}
	if st := f.Env.Lab.MAAS.ImageStats(); st.Imports != 0 {
		t.Fatalf("the lab's MAAS imported: %+v", st)
	}
	if syncs, err := f.Engine.ImageSyncs(t.Context()); err != nil || len(syncs) != 0 {
		t.Fatalf("image sync records %+v %v: want none", syncs, err)
	}
}

// TestImagesSyncUnknownImage: POST /images/sync naming an image the
// current design does not declare (or a Site it does not have) is
// refused 422 naming it, and no task is made (the engine's task list is
// unchanged), instead of 201 and a task that fails.
func TestImagesSyncUnknownImage(t *testing.T) {
	t.Parallel()
	f := &fixture{apitest.Start(t, apitest.WithSeed(9))}
	op := f.Token[api.RoleOperator]
	before, err := f.Engine.Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []apitypes.ImageSyncRequest{{Image: "nope-img"}, {Site: "nope-site"}} {
		body, _ := json.Marshal(req)
		code, answer := f.do(t, "POST", "/api/v1/images/sync", op, "application/json", body)
		if code != http.StatusUnprocessableEntity || !strings.Contains(string(answer), "nope-") {
			t.Fatalf("sync %+v: %d %s, want 422 naming it", req, code, answer)
		}
	}
	after, err := f.Engine.Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("tasks: %d before, %d after refused syncs", len(before), len(after))
	}
}
