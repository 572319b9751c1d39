package maas

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/canonical/gomaasclient/entity"
)

// TestImportNewSelection: a selection of a release and architecture the
// region lacks (ubuntu/noble on arm64, ubuntu/bionic) makes, after an
// import, synced resources that are complete; while the import runs
// is_importing is true and the new resources are incomplete (a deploy
// of them is accepted and fails at install, as MAAS's).
func TestImportNewSelection(t *testing.T) {
	l := newSimLab(t, func(o *Options) { o.Durations.Import = 1000 * time.Second }) // 1 s
	var sel map[string]any
	l.must(http.StatusOK, "POST", "/boot-sources/1/selections/", url.Values{"os": {"ubuntu"}, "release": {"bionic"},
		"arches": {"amd64", "arm64"}}, &sel)
	var noble []map[string]any
	l.must(http.StatusOK, "GET", "/boot-sources/1/selections/", nil, &noble)
	for _, s := range noble {
		if s["release"] == "noble" {
			l.must(http.StatusOK, "PUT", fmt.Sprintf("/boot-sources/1/selections/%v/", s["id"]), url.Values{"arches": {"amd64,arm64"}}, nil)
		}
	}
	before := len(l.s.BootResources())
	id := l.ready(1, "n1") // before the import: the deploy's 5 ms install runs well inside its 1 s
	l.must(http.StatusOK, "POST", "/boot-resources/?op=import", nil, nil)
	if r := l.must(http.StatusOK, "GET", "/boot-resources/?op=is_importing", nil, nil); strings.TrimSpace(string(r.body)) != "true" {
		t.Fatalf("is_importing during the import: %s", r)
	}
	added := map[string]bool{}
	for _, v := range l.s.BootResources()[before:] {
		added[v.Name+" "+v.Architecture] = !v.Complete
	}
	for _, want := range []string{"ubuntu/bionic amd64/ga-18.04", "ubuntu/bionic arm64/hwe-18.04", "ubuntu/noble arm64/ga-24.04"} {
		if !added[want] {
			t.Fatalf("during the import %s is not an incomplete new resource: %v", want, added)
		}
	}
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", url.Values{"distro_series": {"bionic"}}, nil)
	if m := l.waitStatus(id, StatusFailedDeployment); !strings.Contains(fmt.Sprint(m["status_message"]), "os=ubuntu, arch=amd64, subarch=generic, series=bionic") {
		t.Fatalf("deploying bionic before the import ends: %v", m["status_message"])
	}
	waitFor(t, "the import's end", func() bool {
		return string(l.must(200, "GET", "/boot-resources/?op=is_importing", nil, nil).body) == "false\n"
	})
	for _, v := range l.s.BootResources() {
		if !v.Complete {
			t.Fatalf("after the import %+v is incomplete", v)
		}
	}
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", url.Values{"distro_series": {"ubuntu/bionic"}}, nil)
	l.waitStatus(id, StatusDeployed)
	if st := l.s.ImageStats(); st.Imports != 1 || st.ImportsDone != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestStopImport: a stopped import leaves its resources incomplete.
func TestStopImport(t *testing.T) {
	l := newSimLab(t, func(o *Options) { o.Durations.Import = time.Hour })
	l.must(http.StatusOK, "POST", "/boot-sources/1/selections/", url.Values{"release": {"bionic"}}, nil)
	l.must(http.StatusOK, "POST", "/boot-resources/?op=import", nil, nil)
	l.must(http.StatusOK, "POST", "/boot-resources/?op=stop_import", nil, nil)
	if r := l.must(200, "GET", "/boot-resources/?op=is_importing", nil, nil); string(r.body) != "false\n" {
		t.Fatalf("is_importing after stop_import: %s", r)
	}
	n := 0
	for _, v := range l.s.BootResources() {
		if v.Name == "ubuntu/bionic" && !v.Complete {
			n++
		}
	}
	if n != 8 {
		t.Fatalf("%d incomplete bionic resources after the stop, want 8 (4 architectures: the selection's \"*\"; ga, hwe)", n)
	}
}

// TestSelectionForm: BootSourceSelectionForm's refusals.
func TestSelectionForm(t *testing.T) {
	l := newSimLab(t, nil)
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"os": {"ubuntu"}, "release": {"warty"}}, "OS ubuntu with release warty has no available images for download"},
		{url.Values{"release": {"bionic"}, "arches": {"mips"}}, `No available images to download for ['mips']`},
		{url.Values{"release": {"jammy"}}, "Boot source selection with this Boot source, Os and Release already exists."},
	} {
		if r := l.do("POST", "/boot-sources/1/selections/", c.form); r.code != 400 || !strings.Contains(string(r.body), c.want) {
			t.Errorf("selection %v: got %s, want 400 with %q", c.form, r, c.want)
		}
	}
	l.must(http.StatusNotFound, "GET", "/boot-sources/99/selections/", nil, nil)
	if r := l.do("POST", "/boot-sources/", url.Values{"url": {"http://mirror.lab.invalid/"}}); r.code != 400 ||
		!strings.Contains(string(r.body), "One of keyring_data or keyring_filename must be specified.") {
		t.Fatalf("a source without a keyring: %s", r)
	}
}

// TestConformanceGomaasclientImages: the Terraform provider's client
// (gomaasclient) lists, reads and deletes boot resources, manages boot
// sources and selections and drives an import on the lab; what it reads
// is what the lab holds.
func TestConformanceGomaasclientImages(t *testing.T) {
	l := newSimLab(t, func(o *Options) { o.Durations.Import = 50 * time.Second })
	gc := l.gomaasclient()
	img, sha := imageBytes(5<<20, 9)
	rid, fid, _ := createImage(l, "custom/golden", sha, len(img))
	for off := 0; off < len(img); off += chunk4M {
		if r := putChunk(l, rid, fid, img[off:min(off+chunk4M, len(img))]); r.code != 200 {
			t.Fatal(r)
		}
	}
	list, err := gc.BootResources.Get(&entity.BootResourcesReadParams{})
	requireMAAS(t, "BootResources.Get", "GET boot-resources/", "list boot resources", err)
	if len(list) != len(l.s.BootResources()) {
		t.Fatalf("gomaasclient lists %d resources, the lab holds %d", len(list), len(l.s.BootResources()))
	}
	br, err := gc.BootResource.Get(rid)
	requireMAAS(t, "BootResource.Get", "GET boot-resources/{id}/", "read a boot resource", err)
	if br.Name != "golden" || br.Type != "Uploaded" || br.BaseImage != "ubuntu/jammy" || br.Title != "GPU golden" || len(br.Sets) != 1 {
		t.Fatalf("gomaasclient reads %+v", br)
	}
	for _, st := range br.Sets {
		f := st.Files["root-dd.raw"]
		if !st.Complete || st.Label != "uploaded" || f.SHA256 != sha || f.Size != int64(len(img)) || !f.Complete {
			t.Fatalf("set %+v", st)
		}
	}
	checkSourcesWithGomaasclient(t, l)
	requireMAAS(t, "BootResources.Import", "POST boot-resources/?op=import", "import", gc.BootResources.Import())
	importing, err := gc.BootResources.IsImporting()
	requireMAAS(t, "BootResources.IsImporting", "GET boot-resources/?op=is_importing", "is importing", err)
	if !importing {
		t.Fatal("IsImporting false right after Import")
	}
	requireMAAS(t, "BootResources.StopImport", "POST boot-resources/?op=stop_import", "stop import", gc.BootResources.StopImport())
	requireMAAS(t, "BootResource.Delete", "DELETE boot-resources/{id}/", "delete", gc.BootResource.Delete(rid))
	for _, v := range l.s.BootResources() {
		if v.ID == rid {
			t.Fatalf("resource %d still in the lab after gomaasclient's delete", rid)
		}
	}
	if _, err := gc.BootResource.Get(rid); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("reading the deleted resource: %v", err)
	}
}

func isStatus(err error, code int) bool {
	se, ok := serverError(err)
	return ok && se.StatusCode == code
}

// checkSourcesWithGomaasclient: boot sources and selections through
// gomaasclient.
func checkSourcesWithGomaasclient(t *testing.T, l *simLab) {
	t.Helper()
	gc := l.gomaasclient()
	srcs, err := gc.BootSources.Get()
	requireMAAS(t, "BootSources.Get", "GET boot-sources/", "list boot sources", err)
	if len(srcs) != 1 || srcs[0].URL != "http://images.maas.io/ephemeral-v3/stable/" || srcs[0].KeyringFilename == "" {
		t.Fatalf("boot sources %+v", srcs)
	}
	src, err := gc.BootSources.Create(&entity.BootSourceParams{URL: "http://mirror.lab.invalid/maas/", KeyringFilename: "/k.gpg"})
	requireMAAS(t, "BootSources.Create", "POST boot-sources/", "create a boot source", err)
	src, err = gc.BootSource.Update(src.ID, &entity.BootSourceParams{URL: "http://mirror2.lab.invalid/maas/"})
	requireMAAS(t, "BootSource.Update", "PUT boot-sources/{id}/", "update a boot source", err)
	if got, _ := gc.BootSource.Get(src.ID); got == nil || got.URL != "http://mirror2.lab.invalid/maas/" {
		t.Fatalf("the updated source reads %+v", got)
	}
	sel, err := gc.BootSourceSelections.Create(src.ID, &entity.BootSourceSelectionParams{OS: "ubuntu", Release: "noble", Arches: []string{"amd64", "arm64"}})
	requireMAAS(t, "BootSourceSelections.Create", "POST boot-sources/{id}/selections/", "create a selection", err)
	if sel.BootSourceID != src.ID || len(sel.Arches) != 2 || sel.Subarches[0] != "*" {
		t.Fatalf("selection %+v", sel)
	}
	sel, err = gc.BootSourceSelection.Update(src.ID, sel.ID, &entity.BootSourceSelectionParams{Arches: []string{"arm64"}})
	requireMAAS(t, "BootSourceSelection.Update", "PUT selections/{id}/", "update a selection", err)
	if got, _ := gc.BootSourceSelection.Get(src.ID, sel.ID); got == nil || len(got.Arches) != 1 || got.Arches[0] != "arm64" {
		t.Fatalf("the updated selection reads %+v", got)
	}
	sels, err := gc.BootSourceSelections.Get(src.ID)
	if err != nil || len(sels) != 1 {
		t.Fatalf("selections %+v %v", sels, err)
	}
	requireMAAS(t, "BootSourceSelection.Delete", "DELETE selections/{id}/", "delete a selection", gc.BootSourceSelection.Delete(src.ID, sel.ID))
	requireMAAS(t, "BootSource.Delete", "DELETE boot-sources/{id}/", "delete a boot source", gc.BootSource.Delete(src.ID))
	if _, err := gc.BootSource.Get(src.ID); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("reading the deleted source: %v", errors.Unwrap(err))
	}
}
