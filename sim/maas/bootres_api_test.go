package maas

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const chunk4M = 4 << 20

// imageBytes is n bytes of reproducible content and its SHA-256.
func imageBytes(n int, seed int64) ([]byte, string) {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// createImage creates an uploaded resource without content, as the MAAS
// CLI does before it uploads, and returns the resource and file IDs.
func createImage(l *simLab, name, sha string, size int) (rid, fid int, upload string) {
	l.tb.Helper()
	return createImageForm(l, url.Values{"name": {name}, "architecture": {"amd64/generic"}, "sha256": {sha},
		"size": {fmt.Sprint(size)}, "filetype": {"ddraw"}, "title": {"GPU golden"}, "base_image": {"ubuntu/jammy"}})
}

// createImageForm creates a resource from a form and returns the IDs of
// its newest set's file, read from its upload_uri.
func createImageForm(l *simLab, form url.Values) (rid, fid int, upload string) {
	l.tb.Helper()
	var res struct {
		ID   int `json:"id"`
		Sets map[string]struct {
			Files map[string]struct {
				UploadURI string `json:"upload_uri"`
			} `json:"files"`
		} `json:"sets"`
	}
	l.must(http.StatusCreated, "POST", "/boot-resources/", form, &res)
	for _, st := range res.Sets {
		for _, f := range st.Files {
			if f.UploadURI != "" {
				upload = f.UploadURI
			}
		}
	}
	if _, err := fmt.Sscanf(upload, APIPrefix+"/boot-resources/%d/upload/%d/", &rid, &fid); err != nil {
		l.tb.Fatalf("upload_uri %q: %v", upload, err)
	}
	return rid, fid, upload
}

// putChunk sends one chunk as the MAAS CLI does.
func putChunk(l *simLab, rid, fid int, chunk []byte) rawResp {
	l.tb.Helper()
	req, err := http.NewRequest("PUT", fmt.Sprintf("%s%s/boot-resources/%d/upload/%d/", l.hs.URL, APIPrefix, rid, fid), bytes.NewReader(chunk))
	if err != nil {
		l.tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Authorization", oauthHeader(labCreds))
	resp, err := l.hs.Client().Do(req)
	if err != nil {
		l.tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResp{code: resp.StatusCode, body: b}
}

func viewOf(tb testing.TB, s *Server, id int) BootResourceView {
	tb.Helper()
	for _, v := range s.BootResources() {
		if v.ID == id {
			return v
		}
	}
	tb.Fatalf("no boot resource %d in the lab", id)
	return BootResourceView{}
}

// TestUploadInChunks uploads 10 MiB in 4 MiB chunks: the lab holds what
// was sent, the set is complete at the last chunk, the content on disk
// is the image, and a deploy takes it (custom/<name>, its SHA-256).
func TestUploadInChunks(t *testing.T) {
	dir := t.TempDir()
	l := newSimLab(t, func(o *Options) { o.ImageDir = dir })
	img, sha := imageBytes(10<<20, 1)
	rid, fid, _ := createImage(l, "custom/gpu-golden", sha, len(img))
	for off := 0; off < len(img); off += chunk4M {
		if v := viewOf(t, l.s, rid); v.Complete || v.Held != int64(off) {
			t.Fatalf("before the chunk at %d the lab holds %d (complete %v)", off, v.Held, v.Complete)
		}
		if r := putChunk(l, rid, fid, img[off:min(off+chunk4M, len(img))]); r.code != http.StatusOK {
			t.Fatalf("chunk at %d: %s", off, r)
		}
	}
	v := viewOf(t, l.s, rid)
	if !v.Complete || v.Held != int64(len(img)) || v.SHA256 != sha || v.Name != "gpu-golden" || v.Type != "Uploaded" {
		t.Fatalf("after the upload: %+v", v)
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("file-%d", fid)))
	if err != nil || !bytes.Equal(onDisk, img) {
		t.Fatalf("content on disk: %d bytes, err %v; want the image", len(onDisk), err)
	}
	if st := l.s.ImageStats(); st.Chunks != 3 || st.BytesReceived != int64(len(img)) || st.Creates != 1 {
		t.Fatalf("stats %+v", st)
	}
	if r := putChunk(l, rid, fid, []byte("x")); r.code != 400 || string(r.body) != "Cannot upload to a complete file." {
		t.Fatalf("a chunk to a complete file: %s", r)
	}
	id := l.ready(1, "gpu01")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", url.Values{"osystem": {"custom"}, "distro_series": {"gpu-golden"}}, nil)
	m := l.waitStatus(id, StatusDeployed)
	if m["osystem"] != "custom" || m["distro_series"] != "gpu-golden" {
		t.Fatalf("deployed machine renders osystem %v distro_series %v", m["osystem"], m["distro_series"])
	}
	if d, _ := l.s.DeployedImage(id); d.Name() != "custom/gpu-golden" || d.SHA256 != sha {
		t.Fatalf("deployed image %+v", d)
	}
}

// TestUploadWrongChecksum: the last chunk of content whose SHA-256
// differs is refused with MAAS's message; the file stays incomplete (a
// deploy of it fails at install) at what it held before, and the resource can be deleted
// (its file removed from disk).
func TestUploadWrongChecksum(t *testing.T) {
	dir := t.TempDir()
	l := newSimLab(t, func(o *Options) { o.ImageDir = dir })
	img, _ := imageBytes(6<<20, 2)
	_, other := imageBytes(6<<20, 3)
	rid, fid, _ := createImage(l, "custom/bad", other, len(img))
	if r := putChunk(l, rid, fid, img[:chunk4M]); r.code != 200 {
		t.Fatalf("first chunk: %s", r)
	}
	r := putChunk(l, rid, fid, img[chunk4M:])
	if r.code != 400 || string(r.body) != "Saved content does not match given SHA256 value." {
		t.Fatalf("last chunk of the wrong content: %s", r)
	}
	if v := viewOf(t, l.s, rid); v.Complete || v.Held != chunk4M {
		t.Fatalf("after the refusal: %+v", v)
	}
	if st := l.s.ImageStats(); st.ChecksumRefused != 1 {
		t.Fatalf("stats %+v", st)
	}
	id := l.ready(1, "gpu01")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", url.Values{"distro_series": {"custom/bad"}}, nil)
	if m := l.waitStatus(id, StatusFailedDeployment); !strings.Contains(fmt.Sprint(m["status_message"]), "No image could be found for the given selection: os=custom, arch=amd64, subarch=generic, series=bad") {
		t.Fatalf("deploying the refused image: %v", m["status_message"])
	}
	l.must(http.StatusNoContent, "DELETE", fmt.Sprintf("/boot-resources/%d/", rid), nil, nil)
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("files left on disk after the delete: %v", ents)
	}
	l.must(http.StatusNotFound, "GET", fmt.Sprintf("/boot-resources/%d/", rid), nil, nil)
}

// TestUploadTooMuchAndResume: a chunk past the size is refused and
// nothing of it is kept; a client that lost its place reads the file's
// progress, resumes at the offset it gives, and completes.
func TestUploadTooMuchAndResume(t *testing.T) {
	l := newSimLab(t, nil)
	img, sha := imageBytes(9<<20, 4)
	rid, fid, _ := createImage(l, "gpu-golden", sha, len(img))
	if r := putChunk(l, rid, fid, img[:chunk4M]); r.code != 200 {
		t.Fatal(r)
	}
	if r := putChunk(l, rid, fid, append(img[chunk4M:], 0)); r.code != 400 || string(r.body) != "Too much data received." {
		t.Fatalf("one byte too many: %s", r)
	}
	var res struct {
		Sets map[string]struct {
			Complete bool `json:"complete"`
			Files    map[string]struct {
				Size     int64   `json:"size"`
				Progress float64 `json:"progress"`
			} `json:"files"`
		} `json:"sets"`
	}
	l.must(200, "GET", fmt.Sprintf("/boot-resources/%d/", rid), nil, &res)
	var off int64
	for _, st := range res.Sets {
		for _, f := range st.Files {
			off = int64(f.Progress*float64(f.Size)/100) / chunk4M * chunk4M
		}
	}
	if off != chunk4M {
		t.Fatalf("the progress read gives offset %d, want %d (%+v)", off, chunk4M, res)
	}
	for o := int(off); o < len(img); o += chunk4M {
		if r := putChunk(l, rid, fid, img[o:min(o+chunk4M, len(img))]); r.code != 200 {
			t.Fatalf("resumed chunk at %d: %s", o, r)
		}
	}
	if v := viewOf(t, l.s, rid); !v.Complete || v.SHA256 != sha {
		t.Fatalf("after the resume: %+v", v)
	}
}

// TestUploadErrors: MAAS's answers to bad uploads, in its order.
func TestUploadErrors(t *testing.T) {
	l := newSimLab(t, func(o *Options) { o.MaxImageBytes = 8 << 20 })
	img, sha := imageBytes(1<<20, 5)
	rid, fid, _ := createImage(l, "small", sha, len(img))
	if r := putChunk(l, rid, fid, nil); r.code != 400 || string(r.body) != "Missing data." {
		t.Fatalf("empty chunk: %s", r)
	}
	if r := putChunk(l, rid, fid+1000, nil); r.code != 404 {
		t.Fatalf("an empty chunk to a file that does not exist: %s, want 404 (MAAS looks the file up first)", r)
	}
	synced := l.s.BootResources()[0]
	if r := putChunk(l, synced.ID, fid, img[:10]); r.code != 403 || string(r.body) != "Cannot upload to a resource of type: 0." {
		t.Fatalf("upload to a synced resource: %s", r)
	}
	r := l.do("POST", "/boot-resources/", url.Values{"name": {"huge"}, "architecture": {"amd64/generic"},
		"sha256": {sha}, "size": {fmt.Sprint(9 << 20)}})
	if r.code != 400 || !strings.Contains(string(r.body), "8388608") {
		t.Fatalf("an image over MaxImageBytes: %s", r)
	}
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"name": {"ubuntu/jammy"}, "architecture": {"amd64/generic"}, "sha256": {sha}, "size": {"1"}}, "ubuntu/jammy is a reserved name"},
		{url.Values{"name": {"x"}, "architecture": {"mips/generic"}, "sha256": {sha}, "size": {"1"}}, "'mips/generic' is not a valid architecture"},
		{url.Values{"name": {"x"}, "architecture": {"amd64/generic"}, "sha256": {"abc"}, "size": {"1"}}, "at least 64 characters (it has 3)"},
		{url.Values{"name": {"x"}, "architecture": {"amd64/generic"}, "sha256": {sha}, "size": {"1"}, "filetype": {"iso"}}, "Select a valid choice. iso is not one of the available choices."},
		{url.Values{"name": {"x"}, "architecture": {"amd64/generic"}, "sha256": {sha}, "size": {"1"}, "base_image": {"jammy"}}, "a base image must follow the format"},
	} {
		if r := l.do("POST", "/boot-resources/", c.form); r.code != 400 || !strings.Contains(string(r.body), c.want) {
			t.Errorf("create %v: got %s, want 400 with %q", c.form, r, c.want)
		}
	}
	if r := l.do("GET", "/boot-resources/?type=weird", nil); r.code != 400 {
		t.Fatalf("bad type: %s", r)
	}
}

// TestDeployNewestCompleteSet: a second upload of the same name with
// keep_old=true adds a set; while it is incomplete a deploy takes the
// older complete set (its SHA-256); without keep_old the older set's
// file is dropped (as MAAS does) and a deploy is accepted but fails at
// install until the new set completes. An image of another architecture
// fails at install too (MAAS takes it as a distro_series).
func TestDeployNewestCompleteSet(t *testing.T) {
	l := newSimLab(t, nil)
	v1, sha1 := imageBytes(1<<20, 11)
	rid, fid, _ := createImage(l, "custom/golden", sha1, len(v1))
	if r := putChunk(l, rid, fid, v1); r.code != 200 {
		t.Fatal(r)
	}
	_, sha2 := imageBytes(1<<20, 12)
	l.must(http.StatusCreated, "POST", "/boot-resources/", url.Values{"name": {"custom/golden"}, "architecture": {"amd64/generic"},
		"sha256": {sha2}, "size": {fmt.Sprint(1 << 20)}, "filetype": {"ddraw"}, "keep_old": {"true"}}, nil)
	if v := viewOf(t, l.s, rid); v.Sets != 2 || !v.Complete || v.SHA256 != sha2 {
		t.Fatalf("after a second create with keep_old: %+v", v)
	}
	id := l.ready(1, "gpu01")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", url.Values{"distro_series": {"custom/golden"}}, nil)
	l.waitStatus(id, StatusDeployed)
	if d, _ := l.s.DeployedImage(id); d.SHA256 != sha1 {
		t.Fatalf("deployed %+v, want the complete set's %s", d, sha1)
	}
	l.must(http.StatusCreated, "POST", "/boot-resources/", url.Values{"name": {"golden"}, "architecture": {"amd64/generic"},
		"sha256": {sha2}, "size": {fmt.Sprint(1 << 20)}, "filetype": {"ddraw"}}, nil)
	if v := viewOf(t, l.s, rid); v.Complete {
		t.Fatalf("without keep_old the older sets keep a file: %+v", v)
	}
	id2 := l.ready(2, "gpu02")
	l.must(http.StatusOK, "POST", "/machines/"+id2+"/?op=deploy", url.Values{"distro_series": {"golden"}}, nil)
	if m := l.waitStatus(id2, StatusFailedDeployment); !strings.Contains(fmt.Sprint(m["status_message"]), "series=golden, purpose=xinstall") {
		t.Fatalf("deploying an image with no complete set: %v", m["status_message"])
	}
	arm, shaArm := imageBytes(1<<10, 13)
	arid, afid, _ := createImageForm(l, url.Values{"name": {"armonly"}, "architecture": {"arm64/generic"},
		"sha256": {shaArm}, "size": {fmt.Sprint(len(arm))}, "filetype": {"ddraw"}})
	if r := putChunk(l, arid, afid, arm); r.code != 200 {
		t.Fatalf("arm upload: %s", r)
	}
	l.must(http.StatusOK, "POST", "/machines/"+id2+"/?op=deploy", url.Values{"distro_series": {"armonly"}}, nil)
	if m := l.waitStatus(id2, StatusFailedDeployment); !strings.Contains(fmt.Sprint(m["status_message"]), "arch=amd64, subarch=generic, series=armonly") {
		t.Fatalf("deploying an arm64 image on an amd64 machine: %v", m["status_message"])
	}
}

// TestImageWritesKeepListingCache: boot image writes (create, chunks,
// sources, selections, import, delete) change no machine's JSON, so a
// machine listing's cache survives them (a 10 GiB upload is 2,560 chunks;
// each re-rendered every machine at the next listing).
func TestImageWritesKeepListingCache(t *testing.T) {
	l := newSimLab(t, func(o *Options) { o.Durations.Import = time.Second })
	id := l.ready(1, "a")
	l.must(http.StatusOK, "GET", "/machines/", nil, nil) // fills the cache
	shared := l.s.sharedRev.Load()
	img, sha := imageBytes(5<<20, 21)
	rid, fid, _ := createImage(l, "custom/cache", sha, len(img))
	putChunk(l, rid, fid, img[:chunk4M])
	putChunk(l, rid, fid, img[chunk4M:])
	l.must(http.StatusOK, "POST", "/boot-sources/1/selections/", url.Values{"release": {"bionic"}}, nil)
	l.must(http.StatusOK, "PUT", "/boot-sources/1/selections/1/", url.Values{"arches": {"amd64"}}, nil)
	l.must(http.StatusOK, "POST", "/boot-resources/?op=import", nil, nil)
	l.must(http.StatusNoContent, "DELETE", fmt.Sprintf("/boot-resources/%d/", rid), nil, nil)
	if got := l.s.sharedRev.Load(); got != shared {
		t.Fatalf("image writes moved the listing cache's shared revision %d -> %d: every machine re-renders", shared, got)
	}
	l.s.mu.Lock()
	m := l.s.machines[id]
	ok := m.rendered.valid && m.rendered.rev == m.rev
	l.s.mu.Unlock()
	if !ok {
		t.Fatal("machine a's cached JSON was dropped")
	}
}

// TestCreateWithContentBounded: content given at creation (multipart, as
// the MAAS CLI sends a small file) makes a complete resource; a body over
// MaxImageBytes is refused naming the bound, before it is read whole.
func TestCreateWithContentBounded(t *testing.T) {
	l := newSimLab(t, func(o *Options) { o.MaxImageBytes = 1 << 20 })
	send := func(content []byte) rawResp {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for k, v := range map[string]string{"name": "custom/small", "architecture": "amd64/generic", "filetype": "ddraw"} {
			_ = mw.WriteField(k, v)
		}
		fw, _ := mw.CreateFormFile("content", "image.raw")
		_, _ = fw.Write(content)
		_ = mw.Close()
		req, _ := http.NewRequest("POST", l.hs.URL+APIPrefix+"/boot-resources/", &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", oauthHeader(labCreds))
		resp, err := l.hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return rawResp{code: resp.StatusCode, body: b}
	}
	small, sha := imageBytes(64<<10, 31)
	if r := send(small); r.code != http.StatusCreated {
		t.Fatalf("a small image with its content: %s", r)
	}
	var v BootResourceView
	for _, x := range l.s.BootResources() {
		if x.Name == "small" {
			v = x
		}
	}
	if !v.Complete || v.SHA256 != sha || v.Held != int64(len(small)) {
		t.Fatalf("the created resource: %+v", v)
	}
	big, _ := imageBytes(3<<20, 32)
	if r := send(big); r.code != 400 || !strings.Contains(string(r.body), "over the lab's bound") {
		t.Fatalf("content over MaxImageBytes: %s", r)
	}
}

// TestUploadWholeFileInOnePut: MAAS takes a chunk of any size; the lab
// streams it to disk (a plain curl PUT of a whole 80 MiB image), without
// holding it in memory or the region's lock.
func TestUploadWholeFileInOnePut(t *testing.T) {
	dir := t.TempDir()
	l := newSimLab(t, func(o *Options) { o.ImageDir = dir })
	img, sha := imageBytes(80<<20, 41)
	rid, fid, _ := createImage(l, "custom/big", sha, len(img))
	if r := putChunk(l, rid, fid, img); r.code != 200 {
		t.Fatalf("one PUT of the whole image: %s", r)
	}
	if v := viewOf(t, l.s, rid); !v.Complete || v.Held != int64(len(img)) || v.SHA256 != sha {
		t.Fatalf("after one PUT: %+v", v)
	}
	if onDisk, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("file-%d", fid))); err != nil || !bytes.Equal(onDisk, img) {
		t.Fatalf("content on disk: %d bytes, %v", len(onDisk), err)
	}
}

// TestUploadDoesNotBlockTheRegion: while a chunk is still arriving, the
// region answers other requests (the chunk is streamed outside its lock),
// and a second chunk to the same file waits for the first.
func TestUploadDoesNotBlockTheRegion(t *testing.T) {
	l := newSimLab(t, nil)
	img, sha := imageBytes(2<<20, 51)
	rid, fid, _ := createImage(l, "custom/slow", sha, len(img))
	pr, pw := io.Pipe()
	done := make(chan rawResp, 1)
	go func() {
		req, _ := http.NewRequest("PUT", fmt.Sprintf("%s%s/boot-resources/%d/upload/%d/", l.hs.URL, APIPrefix, rid, fid), pr)
		req.ContentLength = 1 << 20
		req.Header.Set("Content-Type", "application/octet-stream")
		req.Header.Set("Authorization", oauthHeader(labCreds))
		resp, err := l.hs.Client().Do(req)
		if err != nil {
			done <- rawResp{code: -1, body: []byte(err.Error())}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- rawResp{code: resp.StatusCode, body: b}
	}()
	if _, err := pw.Write(img[:1000]); err != nil { // the upload is under way
		t.Fatal(err)
	}
	answered := make(chan int, 2)
	go func() {
		answered <- l.do("GET", "/machines/", nil).code
		answered <- l.do("GET", fmt.Sprintf("/boot-resources/%d/", rid), nil).code
	}()
	for range 2 {
		select {
		case code := <-answered:
			if code != http.StatusOK {
				t.Fatalf("a request during the upload: %d", code)
			}
		case <-time.After(labWait):
			t.Fatal("the region did not answer while a chunk was arriving")
		}
	}
	if _, err := pw.Write(img[1000 : 1<<20]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if r := <-done; r.code != 200 {
		t.Fatalf("the slow chunk: %s", r)
	}
	if r := putChunk(l, rid, fid, img[1<<20:]); r.code != 200 {
		t.Fatalf("the last chunk: %s", r)
	}
	if v := viewOf(t, l.s, rid); !v.Complete {
		t.Fatalf("%+v", v)
	}
}
