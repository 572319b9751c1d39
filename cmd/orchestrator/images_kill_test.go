package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/labimage"
	"github.com/slipway-dev/slipway/sim/maas"
)

// killImageSize is the image the kill test uploads (32 chunks); killAt is
// where the lab's MAAS stalls it for the kill: four chunks in.
const (
	killImageSize = 128 << 20
	killAt        = 4 * drivers.ImageChunkSize
)

// labUpload is the lab MAAS's uploaded image as its API answers: the
// resources named gpu-golden, and the newest one's sets.
type labUpload struct {
	resources int
	sets      int
	complete  bool
	sha256    string
	held      int64 // bytes of the newest set's file, from its progress
}

// upload reads the uploaded image gpu-golden from the lab's MAAS API
// (boot-resources?type=uploaded, then the resource with its sets).
func (lv *labView) upload(t *testing.T) labUpload {
	t.Helper()
	var list []struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	}
	if err := lv.maasGet("/boot-resources/", url.Values{"type": {"uploaded"}}, &list); err != nil {
		t.Fatal(err)
	}
	var u labUpload
	id := 0
	for _, r := range list {
		if r.Name == "gpu-golden" || r.Name == "custom/gpu-golden" {
			u.resources++
			id = r.ID
		}
	}
	if id == 0 {
		return u
	}
	var res struct {
		Sets map[string]struct {
			Complete bool `json:"complete"`
			Files    map[string]struct {
				SHA256   string  `json:"sha256"`
				Size     int64   `json:"size"`
				Complete bool    `json:"complete"`
				Progress float64 `json:"progress"`
			} `json:"files"`
		} `json:"sets"`
	}
	if err := lv.maasGet(fmt.Sprintf("/boot-resources/%d/", id), nil, &res); err != nil {
		t.Fatal(err)
	}
	u.sets = len(res.Sets)
	for _, s := range res.Sets {
		for _, f := range s.Files {
			u.complete, u.sha256 = s.Complete && f.Complete, f.SHA256
			u.held = int64(f.Progress * float64(f.Size) / 100)
			if f.Complete {
				u.held = f.Size
			}
		}
	}
	return u
}

// imageSite writes the kill test's custom image into dir/images and its
// Image document into the generated site, whose Site defaults deploy it.
func imageSite(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "images"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The lab's image generator: no chunk is like another, so a chunk
	// sent twice or in the wrong place changes the SHA-256 MAAS checks.
	path := filepath.Join(dir, "images", "gpu-golden.ddraw")
	if _, err := labimage.Write(path, "gpu-golden", "amd64/generic", killImageSize); err != nil {
		t.Fatal(err)
	}
	sha := fileSHA256(t, path) // of the file as written, read back
	doc := fmt.Sprintf("apiVersion: slipway/v1\nkind: Image\nmetadata: {name: gpu-golden}\nspec:\n  architecture: amd64/generic\n"+
		"  custom:\n    source: {file: gpu-golden.ddraw, sha256: %s}\n    format: ddraw\n    size: %d\n    baseImage: ubuntu/jammy\n", sha, killImageSize)
	if err := os.WriteFile(filepath.Join(dir, "site", "images.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(dir, "site", "site.yaml")
	b, err := os.ReadFile(sp)
	if err != nil || !strings.Contains(string(b), "image: jammy") {
		t.Fatalf("site.yaml: %v (no image: jammy to replace)", err)
	}
	if err := os.WriteFile(sp, []byte(strings.Replace(string(b), "image: jammy", "image: gpu-golden", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return sha
}

// fileSHA256 is the SHA-256 (hex) of the file at path.
func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestImageSyncKill9Resumes: `orchestrator images sync` (the engine in
// the process) is killed with SIGKILL while it uploads a 128 MiB image
// into the lab's MAAS (a separate process); `orchestrator wait` resumes
// the task, which asks MAAS what it holds and sends the rest. From the
// lab's MAAS API: one resource with one set, complete, with the SHA-256
// of the image file (MAAS checked its content against it at the last
// byte; the content, the lab's image generator's, repeats no chunk), at most one upload request
// more than the chunks (the one the lab stalled, cut by the kill), and it
// held the four chunks before the stall at the kill.
func TestImageSyncKill9Resumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and uploads 128 MiB: skipped with -short")
	}
	t.Parallel()
	dir, bin, _ := generatedSite(t, 1)
	sha := imageSite(t, dir)
	// The lab's MAAS stalls the chunk at killAt until its client goes
	// away, so the kill lands mid-upload whatever the machine's speed.
	stall := &maas.UploadStall{AtBytes: killAt, Times: 1, For: 10 * time.Minute}
	lv := startLabProc(t, bin, dir, &maas.Faults{UploadStall: stall}, 1, 0.01)
	state, common := writeEngineFiles(t, bin, dir, "synthetic", lv.info)
	f, err := os.OpenFile(filepath.Join(dir, "engine.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = fmt.Fprintf(f, "imageDir: %s\n", filepath.Join(dir, "images"))
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"images", "sync", "-o", "json"}, common...)...)
	cmd.Env = childEnv(lv.info)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	held := killMidUpload(t, lv, cmd, &out)
	code, o, errs := cli(t, "tasks", "--state", state, "-o", "json")
	var tasks []struct{ ID, Action string }
	if code != 0 || json.Unmarshal([]byte(o), &tasks) != nil {
		t.Fatalf("tasks: %d %s %s", code, o, errs)
	}
	id := ""
	for _, tk := range tasks {
		if tk.Action == "sync_images" {
			id = tk.ID
		}
	}
	if id == "" {
		t.Fatalf("the killed sync left no task: %s", o)
	}
	wait := exec.Command(bin, append([]string{"wait", id, "-o", "json"}, common...)...)
	wait.Env = childEnv(lv.info)
	if b, err := wait.CombinedOutput(); err != nil {
		t.Fatalf("wait: %v\n%s", err, b)
	}
	u := lv.upload(t)
	if u.resources != 1 || u.sets != 1 || !u.complete || u.sha256 != sha || u.held != killImageSize {
		t.Fatalf("the lab's MAAS after the resumed sync: %+v, want one resource, one set, complete, sha256 %s", u, sha)
	}
	code, o, errs = cli(t, "images", "list", "--state", state, "-o", "json")
	var list struct {
		Images []struct {
			Site, Image, State string
			Progress           float64
			Nodes              []string
			Resumed            int64
		}
	}
	if code != 0 || json.Unmarshal([]byte(o), &list) != nil || len(list.Images) != 1 {
		t.Fatalf("images list: %d %s %s", code, o, errs)
	}
	if im := list.Images[0]; im.Image != "gpu-golden" || im.State != "synced" || im.Progress != 100 || len(im.Nodes) != 1 || im.Resumed != killAt {
		t.Errorf("images list: %+v, want gpu-golden synced, its node, resumed from %d bytes", im, killAt)
	}
	if code, o, _ := cli(t, "images", "show", "gpu-golden", "--state", state); code != 0 || !strings.Contains(o, "resumed from") {
		t.Errorf("images show: %d %s", code, o)
	}
	puts := 0
	for _, r := range lv.stats(t).Requests {
		if strings.HasPrefix(r.Request, "PUT ") && strings.Contains(r.Request, "/upload/") {
			puts += r.Count
		}
	}
	if chunks := killImageSize / drivers.ImageChunkSize; puts > chunks+1 {
		t.Errorf("the lab's MAAS took %d upload requests for %d chunks (one may be cut by the kill): chunks were sent again", puts, chunks)
	}
	t.Logf("killed with %d of %d bytes in MAAS; the resumed sync completed with MAAS's checksum; %d upload requests", held, killImageSize, puts)
}

// killMidUpload polls the lab's MAAS (every 10 ms, at most 2 minutes)
// until it holds the image up to killAt, where its UploadStall holds the
// next chunk, SIGKILLs the process and returns what MAAS held then.
func killMidUpload(t *testing.T, lv *labView, cmd *exec.Cmd, out *strings.Builder) int64 {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait() // its output is complete (and no longer written) then
			t.Fatalf("the upload did not reach %d bytes within 2 minutes:\n%s", killAt, out.String())
		}
		if u := lv.upload(t); u.held >= killAt || u.complete {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v", err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the sync ended before the kill: %v\n%s", err, out.String())
	}
	if u := lv.upload(t); u.complete || u.held != killAt {
		t.Fatalf("after the kill the lab's MAAS holds %+v, want %d bytes: the stall did not hold the upload", u, killAt)
	}
	return killAt
}
