package maas

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// fileState reads a resource's newest set (by version) and its one file
// from the API: complete, progress (absent when complete).
type fileState struct {
	SetComplete  bool
	SetProgress  float64
	FileComplete bool
	FileProgress float64
	HasProgress  bool
}

func readFileState(l *simLab, rid int) fileState {
	l.tb.Helper()
	var res struct {
		Sets map[string]struct {
			Complete bool     `json:"complete"`
			Progress *float64 `json:"progress"`
			Files    map[string]struct {
				Complete bool     `json:"complete"`
				Progress *float64 `json:"progress"`
			} `json:"files"`
		} `json:"sets"`
	}
	l.must(http.StatusOK, "GET", fmt.Sprintf("/boot-resources/%d/", rid), nil, &res)
	newest := ""
	for v := range res.Sets {
		if v > newest {
			newest = v
		}
	}
	st := res.Sets[newest]
	out := fileState{SetComplete: st.Complete}
	if st.Progress != nil {
		out.SetProgress = *st.Progress
	}
	for _, f := range st.Files {
		out.FileComplete = f.Complete
		if f.Progress != nil {
			out.FileProgress, out.HasProgress = *f.Progress, true
		}
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestRegionSync: with three region controllers, an upload fills the
// receiving region's copy; MAAS's progress counts every region's copy
// (100*held/(size*3)); after the last byte the file is not complete
// (a deploy cannot take it, the lab's view says incomplete, another
// chunk is refused as complete for that region) until the other regions
// copied it after Durations.RegionSync; then complete. GET
// regioncontrollers/ lists the three.
func TestRegionSync(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.RegionControllers = 3
		o.Durations.RegionSync = 1000 * time.Second // 1 s
	})
	var regions []map[string]any
	l.must(http.StatusOK, "GET", "/regioncontrollers/", nil, &regions)
	if len(regions) != 3 || regions[0]["node_type_name"] != "Region controller" || regions[0]["system_id"] == regions[1]["system_id"] {
		t.Fatalf("regioncontrollers/: %v", regions)
	}
	img, sha := imageBytes(1<<20, 31)
	rid, fid, _ := createImage(l, "custom/ha", sha, len(img))
	if r := putChunk(l, rid, fid, img[:1<<19]); r.code != 200 {
		t.Fatal(r)
	}
	if fs := readFileState(l, rid); !near(fs.FileProgress, 100.0/6) || !near(fs.SetProgress, 100.0/6) || fs.FileComplete {
		t.Fatalf("half uploaded on one region of three: %+v, want progress %.4f", fs, 100.0/6)
	}
	start := time.Now()
	if r := putChunk(l, rid, fid, img[1<<19:]); r.code != 200 {
		t.Fatal(r)
	}
	fs := readFileState(l, rid)
	if !near(fs.FileProgress, 100.0/3) || fs.FileComplete || fs.SetComplete {
		t.Fatalf("uploaded, the other regions not synced yet: %+v, want progress %.4f, incomplete", fs, 100.0/3)
	}
	if v := viewOf(t, l.s, rid); v.Complete || v.Held != int64(len(img)) || v.Regions != 1 {
		t.Fatalf("view before the region sync: %+v", v)
	}
	if r := putChunk(l, rid, fid, img[:10]); r.code != 400 || string(r.body) != "Cannot upload to a complete file." {
		t.Fatalf("a chunk after the receiving region holds it all: %s", r)
	}
	waitFor(t, "the region sync", func() bool { return readFileState(l, rid).FileComplete })
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("complete after %v, before the region sync's 1 s", d)
	}
	if fs := readFileState(l, rid); !fs.SetComplete || fs.HasProgress {
		t.Fatalf("after the region sync: %+v", fs)
	}
	if v := viewOf(t, l.s, rid); !v.Complete || v.Regions != 3 {
		t.Fatalf("view after the region sync: %+v", v)
	}
}

// TestOneRegionDefault: without RegionControllers the region is alone:
// regioncontrollers/ lists one, the last byte completes the file at once.
func TestOneRegionDefault(t *testing.T) {
	l := newSimLab(t, nil)
	var regions []map[string]any
	l.must(http.StatusOK, "GET", "/regioncontrollers/", nil, &regions)
	if len(regions) != 1 {
		t.Fatalf("regioncontrollers/: %v", regions)
	}
	img, sha := imageBytes(1<<16, 32)
	rid, fid, _ := createImage(l, "custom/solo", sha, len(img))
	if r := putChunk(l, rid, fid, img); r.code != 200 {
		t.Fatal(r)
	}
	if fs := readFileState(l, rid); !fs.FileComplete || !fs.SetComplete {
		t.Fatalf("one region: %+v", fs)
	}
	if v := viewOf(t, l.s, rid); !v.Complete || v.Regions != 1 {
		t.Fatalf("view: %+v", v)
	}
}

// TestDeployFailsAtInstall: MAAS takes any distro_series that names a
// boot resource (complete or not, any architecture) and fails the
// deployment at install when the machine's architecture has no complete
// set of it: Failed deployment with MAAS's MissingBootImage message. A
// name no resource has is still a 400.
func TestDeployFailsAtInstall(t *testing.T) {
	l := newSimLab(t, nil)
	_, sha := imageBytes(1<<16, 33)
	createImage(l, "custom/partial", sha, 1<<16) // nothing uploaded
	arm, shaArm := imageBytes(1<<10, 34)
	arid, afid, _ := createImageForm(l, url.Values{"name": {"armonly"}, "architecture": {"arm64/generic"},
		"sha256": {shaArm}, "size": {fmt.Sprint(len(arm))}, "filetype": {"ddraw"}})
	if r := putChunk(l, arid, afid, arm); r.code != 200 {
		t.Fatal(r)
	}
	for i, series := range []string{"custom/partial", "armonly"} {
		id := l.ready(i+1, fmt.Sprintf("m%d", i+1))
		l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", url.Values{"distro_series": {series}}, nil)
		m := l.waitStatus(id, StatusFailedDeployment)
		rel := strings.TrimPrefix(series, "custom/")
		want := fmt.Sprintf("No image could be found for the given selection: os=custom, arch=amd64, subarch=generic, series=%s, purpose=xinstall.", rel)
		if msg, _ := m["status_message"].(string); !strings.Contains(msg, want) {
			t.Fatalf("%s: status_message %q, want it to hold %q", series, msg, want)
		}
		if d, _ := l.s.DeployedImage(id); d.SHA256 != "" {
			t.Fatalf("%s: a failed install recorded %+v", series, d)
		}
		var evs struct {
			Events []map[string]any `json:"events"`
		}
		l.must(http.StatusOK, "GET", "/events/?op=query", url.Values{"id": {id}}, &evs)
		if len(evs.Events) == 0 || evs.Events[0]["type"] != "Failed deployment" || !strings.Contains(fmt.Sprint(evs.Events[0]["description"]), want) {
			t.Fatalf("%s: newest event %v", series, evs.Events)
		}
	}
	id := l.ready(3, "m3")
	if r := l.do("POST", "/machines/"+id+"/?op=deploy", url.Values{"distro_series": {"nosuch"}}); r.code != 400 ||
		!strings.Contains(string(r.body), "is not a valid distro_series") {
		t.Fatalf("an unknown name: %s", r)
	}
}

// doAs sends a request signed with creds.
func doAs(l *simLab, creds Credentials, method, pathQuery string, body io.Reader) rawResp {
	l.tb.Helper()
	req, err := http.NewRequest(method, l.hs.URL+APIPrefix+pathQuery, body)
	if err != nil {
		l.tb.Fatal(err)
	}
	req.Header.Set("Authorization", oauthHeader(creds))
	switch {
	case method == http.MethodPut:
		req.Header.Set("Content-Type", "application/octet-stream")
	case body != nil:
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := l.hs.Client().Do(req)
	if err != nil {
		l.tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResp{code: resp.StatusCode, body: b, header: resp.Header}
}

// TestBootAdminRights: a non-admin user (Options.UserKey) lists and reads
// boot resources and asks is_importing; create, delete, upload, import
// and stop_import answer 403 "This method is reserved for admin users.";
// boot sources and selections answer 403 "User is not allowed access to
// this API." even on GET.
func TestBootAdminRights(t *testing.T) {
	user := Credentials{"uc", "ut", "us"}
	l := newSimLab(t, func(o *Options) { o.UserKey = user })
	img, sha := imageBytes(1<<10, 35)
	rid, fid, _ := createImage(l, "custom/rights", sha, len(img))
	for _, c := range []struct{ method, path string }{
		{"GET", "/boot-resources/"}, {"GET", "/boot-resources/?op=is_importing"}, {"GET", fmt.Sprintf("/boot-resources/%d/", rid)},
	} {
		if r := doAs(l, user, c.method, c.path, nil); r.code != 200 {
			t.Errorf("user %s %s: %s", c.method, c.path, r)
		}
	}
	form := url.Values{"name": {"custom/x"}, "architecture": {"amd64/generic"}, "sha256": {sha}, "size": {"1024"}}.Encode()
	for _, c := range []struct{ method, path, body, want string }{
		{"POST", "/boot-resources/", form, "This method is reserved for admin users."},
		{"DELETE", fmt.Sprintf("/boot-resources/%d/", rid), "", "This method is reserved for admin users."},
		{"PUT", fmt.Sprintf("/boot-resources/%d/upload/%d/", rid, fid), string(img), "This method is reserved for admin users."},
		{"POST", "/boot-resources/?op=import", "", "This method is reserved for admin users."},
		{"POST", "/boot-resources/?op=stop_import", "", "This method is reserved for admin users."},
		{"GET", "/boot-sources/", "", "User is not allowed access to this API."},
		{"GET", "/boot-sources/1/", "", "User is not allowed access to this API."},
		{"GET", "/boot-sources/1/selections/", "", "User is not allowed access to this API."},
		{"POST", "/boot-sources/1/selections/", "release=bionic", "User is not allowed access to this API."},
	} {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		if r := doAs(l, user, c.method, c.path, body); r.code != 403 || string(r.body) != c.want {
			t.Errorf("user %s %s: %s, want 403 %q", c.method, c.path, r, c.want)
		}
	}
	if v := viewOf(t, l.s, rid); v.Held != 0 {
		t.Fatalf("a refused upload was kept: %+v", v)
	}
	if st := l.s.ImageStats(); st.Creates != 1 || st.Deletes != 0 || st.Imports != 0 {
		t.Fatalf("stats after refused calls: %+v", st)
	}
}

// TestBootResourceLesserAnswers: MAAS's answers to a DELETE of a missing
// resource (500 from BootResource.objects.get), a SHA-256 known with
// another size (400 text/plain), and sizes its IntegerField takes (0: the
// file is "complete" for the receiving region at once, so an upload is
// refused and a read then fails dividing by zero; negative: too much
// data).
func TestBootResourceLesserAnswers(t *testing.T) {
	l := newSimLab(t, nil)
	if r := l.do("DELETE", "/boot-resources/9999/", nil); r.code != 500 || string(r.body) != "BootResource matching query does not exist." {
		t.Fatalf("DELETE of a missing resource: %s", r)
	}
	img, sha := imageBytes(1<<10, 36)
	createImage(l, "custom/a", sha, len(img))
	r := l.do("POST", "/boot-resources/", url.Values{"name": {"custom/b"}, "architecture": {"amd64/generic"}, "sha256": {sha}, "size": {"2048"}})
	if r.code != 400 || string(r.body) != "File already exists with sha256 that is of different size." || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("a known SHA-256 of another size: %s (%s)", r, r.header.Get("Content-Type"))
	}
	_, sha0 := imageBytes(1<<10, 37)
	rid, fid, _ := createImage(l, "custom/zero", sha0, 0)
	if fs := readFileState(l, rid); fs.FileComplete || !fs.HasProgress || fs.FileProgress != 0 {
		t.Fatalf("a size-0 file before any upload: %+v", fs)
	}
	if r := putChunk(l, rid, fid, []byte("x")); r.code != 400 || string(r.body) != "Cannot upload to a complete file." {
		t.Fatalf("upload to a size-0 file: %s", r)
	}
	if r := l.do("GET", fmt.Sprintf("/boot-resources/%d/", rid), nil); r.code != 500 || string(r.body) != "float division by zero" {
		t.Fatalf("read of a size-0 file after an upload: %s", r)
	}
	_, shaNeg := imageBytes(1<<10, 38)
	nrid, nfid, _ := createImage(l, "custom/negative", shaNeg, -5)
	if r := putChunk(l, nrid, nfid, []byte("x")); r.code != 400 || string(r.body) != msgTooMuch {
		t.Fatalf("upload to a negative-size file: %s", r)
	}
	var list []map[string]any
	if err := json.Unmarshal(l.must(200, "GET", "/boot-resources/", nil, nil).body, &list); err != nil {
		t.Fatal(err)
	}
}

// TestFaultLoseAnswer: with OpFaults.LoseAnswer the request is carried
// out and its answer lost (the connection closes without one): an upload
// chunk lands (the lab holds and counts it) while the client sees a
// transport error; requests of other ops answer as usual.
func TestFaultLoseAnswer(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Seed: 3, Ops: map[string]OpFaults{"PUT read": {LoseAnswer: 1}}}
	})
	img, sha := imageBytes(1<<16, 39)
	rid, fid, _ := createImage(l, "custom/lost", sha, len(img))
	req, err := http.NewRequest("PUT", fmt.Sprintf("%s%s/boot-resources/%d/upload/%d/", l.hs.URL, APIPrefix, rid, fid), strings.NewReader(string(img[:1<<15])))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Authorization", oauthHeader(labCreds))
	if resp, err := l.hs.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the chunk's answer arrived: %d", resp.StatusCode)
	}
	if v := viewOf(t, l.s, rid); v.Held != 1<<15 {
		t.Fatalf("the lab holds %d bytes after the lost answer, want %d", v.Held, 1<<15)
	}
	if st := l.s.ImageStats(); st.Chunks != 1 || st.BytesReceived != 1<<15 {
		t.Fatalf("stats %+v", st)
	}
	if fs := readFileState(l, rid); !near(fs.FileProgress, 50) {
		t.Fatalf("progress after the lost answer: %+v", fs)
	}
}
