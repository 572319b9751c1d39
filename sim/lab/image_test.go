package lab

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/sim/maas"
)

// TestAgentReportsDeployedImage: a custom image uploaded to the lab's MAAS
// in chunks and deployed on its machine is what the machine records
// (Lab.DeployedImages: the name and the SHA-256 of the uploaded content;
// the content is in the region's directory under Config.ImageDir)
// and what its node agent reports with every boot action report; a
// release forgets it.
func TestAgentReportsDeployedImage(t *testing.T) {
	api := newIntrospection(t)
	dir := t.TempDir()
	l, m := agentLab(t, Config{ImageDir: dir})
	c := &labMAAS{t: t, base: "http://" + l.ln.Addr().String() + maas.APIPrefix, creds: l.MAAS.APIKey()}
	img := bytes.Repeat([]byte("slipway-gpu-golden "), 300_000) // 5.7 MB: two 4 MiB chunks
	sum := sha256.Sum256(img)
	sha := hex.EncodeToString(sum[:])
	var res struct {
		ID   int `json:"id"`
		Sets map[string]struct {
			Files map[string]struct {
				UploadURI string `json:"upload_uri"`
			} `json:"files"`
		} `json:"sets"`
	}
	c.must(201, "POST", "/boot-resources/", "application/x-www-form-urlencoded", []byte(url.Values{"name": {"custom/gpu-golden"},
		"architecture": {"amd64/generic"}, "sha256": {sha}, "size": {fmt.Sprint(len(img))}, "filetype": {"ddraw"}}.Encode()), &res)
	upload := ""
	for _, st := range res.Sets {
		upload = strings.TrimPrefix(st.Files["root-dd.raw"].UploadURI, maas.APIPrefix)
	}
	for off := 0; off < len(img); off += 4 << 20 {
		c.must(200, "PUT", upload, "application/octet-stream", img[off:min(off+4<<20, len(img))], nil)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "region-default", "file-*"))
	if len(files) != 1 {
		t.Fatalf("files under the lab's image directory: %v", files)
	}
	if onDisk, err := os.ReadFile(files[0]); err != nil || !bytes.Equal(onDisk, img) {
		t.Fatalf("the region's copy: %d bytes, %v", len(onDisk), err)
	}
	sys := waitSystemID(t, c, m)
	ud := base64.StdEncoding.EncodeToString(userData(api.url, testToken, false))
	c.must(200, "POST", "/machines/"+sys+"/?op=deploy", "application/x-www-form-urlencoded",
		[]byte(url.Values{"osystem": {"custom"}, "distro_series": {"gpu-golden"}, "user_data": {ud}}.Encode()), nil)
	waitFor(t, "Deployed", func() bool { return m.OS() != "" })
	rec := waitAgent(t, m)
	want := ReportedImage{Name: "custom/gpu-golden", SHA256: sha}
	if rec.State != BootstrapDone || rec.Image != want {
		t.Fatalf("agent record: state %s image %+v, want %+v", rec.State, rec.Image, want)
	}
	posts := api.reports()
	if len(posts) == 0 {
		t.Fatal("no report reached the introspection API")
	}
	for _, p := range posts {
		if p.Image == nil || *p.Image != want {
			t.Fatalf("report %s %s carries image %+v, want %+v", p.Action, p.Status, p.Image, want)
		}
	}
	if got := l.DeployedImages()[m.Name]; got.Name() != "custom/gpu-golden" || got.SHA256 != sha {
		t.Fatalf("Lab.DeployedImages: %+v", got)
	}
	c.must(200, "POST", "/machines/"+sys+"/?op=release", "application/x-www-form-urlencoded", nil, nil)
	waitFor(t, "released", func() bool { return m.OS() == "" })
	if _, ok := l.DeployedImages()[m.Name]; ok {
		t.Fatal("a released machine still has a deployed image")
	}
}

// waitSystemID waits until the machine enlisted and commissioned (the lab
// powers it on to PXE) and returns its system ID.
func waitSystemID(t *testing.T, c *labMAAS, m *Machine) string {
	t.Helper()
	m.SetBootDevice("pxe", false, true)
	m.PowerOn()
	id := ""
	waitFor(t, "enlisted", func() bool {
		for _, ms := range c.machines() {
			id = ms
		}
		return id != ""
	})
	c.must(200, "POST", "/machines/"+id+"/?op=commission", "application/x-www-form-urlencoded", nil, nil)
	waitFor(t, "Ready", func() bool { return c.status(id) == "Ready" })
	return id
}

// labMAAS is a bare client of the lab's MAAS.
type labMAAS struct {
	t     *testing.T
	base  string
	creds maas.Credentials
}

func (c *labMAAS) must(want int, method, path, ct string, body []byte, out any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	c.creds.Sign(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *labMAAS) machines() []string {
	var ms []struct {
		SystemID string `json:"system_id"`
	}
	c.must(200, "GET", "/machines/", "", nil, &ms)
	var out []string
	for _, m := range ms {
		out = append(out, m.SystemID)
	}
	return out
}

func (c *labMAAS) status(id string) string {
	var m struct {
		StatusName string `json:"status_name"`
	}
	c.must(200, "GET", "/machines/"+id+"/", "", nil, &m)
	return m.StatusName
}
