package maas

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/sim/lab"
)

// labImageState is the lab MAAS's own view of an image (its
// BootResources, and its API's sets for the SHA-256 of the newest
// complete version), for counting outcomes independently of the driver.
func labImageState(t *testing.T, l *lab.Lab, name, arch string) driverstest.ImageState {
	bare := strings.TrimPrefix(name, "custom/")
	family, _, _ := strings.Cut(arch, "/")
	var st driverstest.ImageState
	for _, r := range l.MAAS.BootResources() {
		custom := r.Type == "Uploaded" && (r.Name == bare || r.Name == name) && r.Architecture == arch
		standard := r.Type != "Uploaded" && r.Name == name && strings.HasPrefix(r.Architecture, family+"/")
		if !custom && !standard {
			continue
		}
		st.Exists = true
		st.Complete = st.Complete || r.Complete
		if custom {
			st.Held, st.Versions = r.Held, r.Sets
			if r.Complete {
				st.SHA256 = labCompleteSHA(t, l, r.ID)
			}
		}
	}
	return st
}

// labCompleteSHA is the SHA-256 of the newest complete set of the lab's
// boot resource id, read from the lab's API.
func labCompleteSHA(t *testing.T, l *lab.Lab, id int) string {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/2.0/boot-resources/%d/", strings.TrimSuffix(l.Info().MAASURL, "/"), id), nil)
	if err != nil {
		t.Fatal(err)
	}
	l.MAAS.APIKey().Sign(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Sets map[string]struct {
			Complete bool `json:"complete"`
			Files    map[string]struct {
				SHA256 string `json:"sha256"`
			} `json:"files"`
		} `json:"sets"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("the lab's boot resource %d: %v", id, err)
	}
	newest, sha := [2]int{-1, -1}, ""
	for v, s := range r.Sets { // versions YYYYmmdd[.N]
		day, rev, _ := strings.Cut(v, ".")
		d, _ := strconv.Atoi(day)
		n, _ := strconv.Atoi(rev)
		if s.Complete && len(s.Files) == 1 && (d > newest[0] || d == newest[0] && n > newest[1]) {
			newest = [2]int{d, n}
			for _, f := range s.Files {
				sha = f.SHA256
			}
		}
	}
	return sha
}

func imagesLab(t *testing.T) (driverstest.ImagesLab, *lab.Lab, *Driver) {
	l := startLab(t, lab.Config{})
	d := newTestDriver(t, l, nil)
	return driverstest.ImagesLab{
		Driver:   d,
		Custom:   drivers.ImageRef{Name: "custom/suite-golden", Architecture: "amd64/generic", Format: "ddraw", BaseImage: "ubuntu/jammy", Title: "suite"},
		Standard: drivers.ImageRef{Name: "ubuntu/focal", Architecture: "arm64/generic"},
		State:    func(name, arch string) driverstest.ImageState { return labImageState(t, l, name, arch) },
		Secrets:  []string{l.Info().APIKey},
	}, l, d
}

// TestImagesConformance runs the images conformance suite against the
// lab's MAAS; each outcome is read from the lab's own boot resources.
func TestImagesConformance(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	driverstest.RunImages(t, func(t *testing.T) driverstest.ImagesLab {
		il, _, _ := imagesLab(t)
		return il
	})
}

func testImage(n int) ([]byte, drivers.ImageRef) {
	b := make([]byte, n) // seeded random: every chunk differs, so a chunk sent twice or misplaced changes the SHA-256
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(n))
	_, _ = rand.NewChaCha8(seed).Read(b)
	s := sha256.Sum256(b)
	return b, drivers.ImageRef{Name: "custom/golden", Architecture: "amd64/generic", Format: "ddraw", BaseImage: "ubuntu/jammy",
		SHA256: hex.EncodeToString(s[:]), Size: int64(n)}
}

// dropOnePut is a proxy in front of the lab's MAAS that forwards the
// first upload PUT and then drops the connection without its answer (the
// chunk landed, the client never hears it).
func dropOnePut(t *testing.T, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	var dropped atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/upload/") || dropped.Swap(true) {
			rp.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r) // MAAS takes the chunk
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.(*net.TCPConn).SetLinger(0)
			conn.Close() // and its answer is lost
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path
}

// TestUploadLostAnswerNotSentTwice: the answer to a chunk is lost after
// MAAS appended it; the driver reads what MAAS holds and does not send
// it again (MAAS would append it twice). Counted from the lab.
func TestUploadLostAnswerNotSentTwice(t *testing.T) {
	l := startLab(t, lab.Config{})
	d := newTestDriver(t, l, map[string]string{SettingURL: dropOnePut(t, l.Info().MAASURL)})
	content, ref := testImage(2*drivers.ImageChunkSize + 77)
	ctx := testCtx(t)
	up, err := d.StartImageUpload(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	for up.Offset < up.Size {
		end := min(up.Offset+drivers.ImageChunkSize, up.Size)
		if up, err = d.UploadImageChunk(ctx, up, content[up.Offset:end]); err != nil {
			t.Fatalf("chunk to %d: %v", end, err)
		}
	}
	st := l.MAAS.ImageStats()
	if !up.Complete || st.BytesReceived != ref.Size || st.Chunks != 3 || st.ChecksumRefused != 0 {
		t.Errorf("upload %+v; the lab received %d bytes in %d chunks (%d refused), want %d in 3, none refused",
			up, st.BytesReceived, st.Chunks, st.ChecksumRefused, ref.Size)
	}
	if s := labImageState(t, l, ref.Name, ref.Architecture); !s.Complete || s.SHA256 != ref.SHA256 {
		t.Errorf("the lab has %+v, want complete with %s", s, ref.SHA256)
	}
}

// TestUploadChecksumRefused: MAAS's refusal of the content is Permanent,
// wraps ErrImageChecksum and quotes MAAS; abandoning deletes the resource
// (the lab counts the delete and lists nothing).
func TestUploadChecksumRefused(t *testing.T) {
	l := startLab(t, lab.Config{})
	d := newTestDriver(t, l, nil)
	content, ref := testImage(1000)
	ref.SHA256 = strings.Repeat("ab", 32)
	ctx := testCtx(t)
	up, err := d.StartImageUpload(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.UploadImageChunk(ctx, up, content)
	if !errors.Is(err, drivers.ErrImageChecksum) || drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "SHA256") {
		t.Fatalf("refused content: %v", err)
	}
	if strings.Contains(err.Error(), l.Info().APIKey) {
		t.Fatalf("the error reveals the API key: %v", err)
	}
	if err := d.AbandonImageUpload(ctx, up); err != nil {
		t.Fatal(err)
	}
	if st := l.MAAS.ImageStats(); st.ChecksumRefused != 1 || st.Deletes != 1 {
		t.Errorf("the lab counted %+v, want 1 refusal and 1 delete", st)
	}
	if s := labImageState(t, l, ref.Name, ref.Architecture); s.Exists {
		t.Errorf("after the abandon the lab still has %+v", s)
	}
}

// TestImagesNotAdmin: MAAS's 403 on an admin-only call is a Permanent
// error that names the admin right (a stub answering as MAAS does for a
// user who is not an administrator).
func TestImagesNotAdmin(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("[]"))
			return
		}
		http.Error(w, "User is not allowed access to this API.", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	key := "ck:tk:secret-token-4242"
	d, err := NewDriver(drivers.Config{Settings: map[string]string{SettingURL: srv.URL + "/MAAS", SettingRetries: "0"},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret(key)}})
	if err != nil {
		t.Fatal(err)
	}
	_, ref := testImage(10)
	_, err = d.StartImageUpload(testCtx(t), ref)
	if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "administrator") || strings.Contains(err.Error(), "secret-token-4242") {
		t.Fatalf("create as a non-admin: %v", err)
	}
	up := drivers.ImageUpload{ResourceID: "1", FileID: "2", Size: 10}
	_, err = d.UploadImageChunk(testCtx(t), up, make([]byte, 10))
	if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "administrator") {
		t.Fatalf("upload as a non-admin: %v", err)
	}
}

// TestUploadUnreachableIsTransient: MAAS not answering is Transient.
func TestUploadUnreachableIsTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d, err := NewDriver(drivers.Config{Settings: map[string]string{SettingURL: "http://" + addr + "/MAAS", SettingRetries: "0"},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret("ck:tk:secret-token-4242")}})
	if err != nil {
		t.Fatal(err)
	}
	_, ref := testImage(10)
	if _, err := d.StartImageUpload(testCtx(t), ref); drivers.Classify(err) != drivers.Transient {
		t.Errorf("MAAS not answering: %v, want Transient", err)
	}
	up := drivers.ImageUpload{ResourceID: "1", FileID: "2", Size: 10}
	if _, err := d.UploadImageChunk(testCtx(t), up, make([]byte, 10)); drivers.Classify(err) != drivers.Transient {
		t.Errorf("a chunk to MAAS not answering: %v, want Transient", err)
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"20261202", "20261202.1", -1}, {"20261202.10", "20261202.9", 1}, {"20261203", "20261202.4", 1}, {"20261202.2", "20261202.2", 0}} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestUploadFileID(t *testing.T) {
	if id, ok := uploadFileID("/MAAS/api/2.0/boot-resources/12/upload/34/", 12); !ok || id != "34" {
		t.Errorf("got %q %v", id, ok)
	}
	for _, uri := range []string{"", "/MAAS/api/2.0/boot-resources/13/upload/34/", "/MAAS/api/2.0/boot-resources/12/upload/x/"} {
		if _, ok := uploadFileID(uri, 12); ok {
			t.Errorf("%q: a file ID", uri)
		}
	}
}

// uploadAll uploads the content through the driver, chunk by chunk.
func uploadAll(t *testing.T, d *Driver, ref drivers.ImageRef, content []byte) {
	t.Helper()
	ctx := testCtx(t)
	up, err := d.StartImageUpload(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	for up.Offset < up.Size {
		end := min(up.Offset+drivers.ImageChunkSize, up.Size)
		if up, err = d.UploadImageChunk(ctx, up, content[up.Offset:end]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeployCustomImage: a machine deploys the custom image the driver
// uploaded, the lab recording its SHA-256 (the newest complete version,
// not the newer incomplete one); an image MAAS does not have at all is
// refused (400 on distro_series) and the machine is not deployed.
func TestDeployCustomImage(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 2})
	d := newTestDriver(t, l, nil)
	content, ref := testImage(drivers.ImageChunkSize + 5)
	uploadAll(t, d, ref, content)
	// A newer version, started and left incomplete: not the one deployed.
	v2, ref2 := testImage(drivers.ImageChunkSize + 6)
	up2, err := d.StartImageUpload(testCtx(t), ref2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.UploadImageChunk(testCtx(t), up2, v2[:drivers.ImageChunkSize]); err != nil {
		t.Fatal(err)
	}
	n := commissioned(t, d, l.Machines()[0])
	n.Platform.Image = ref.Name
	mustDone(t, "Deploy", func(ctx context.Context) (drivers.Result, error) { return d.Deploy(ctx, n, drivers.Deployment{}) })
	img, ok := l.MAAS.DeployedImage(n.MachineID)
	if !ok || img.OSystem != "custom" || img.Series != "golden" || img.SHA256 != ref.SHA256 {
		t.Errorf("the lab deployed %+v, want custom/golden with SHA-256 %s", img, ref.SHA256)
	}

	other := commissioned(t, d, l.Machines()[1])
	other.Platform.Image = "custom/never-uploaded"
	r, err := d.Deploy(testCtx(t), other, drivers.Deployment{})
	if err == nil && r.Status != drivers.StatusFailed {
		t.Fatalf("deploy of an image MAAS lacks: %+v, want refused", r)
	}
	t.Logf("deploy of an image MAAS lacks: %+v %v", r, err)
	if img, _ := l.MAAS.DeployedImage(other.MachineID); img.OSystem != "" {
		t.Errorf("the lab deployed %+v with an image it lacks", img)
	}
}

// TestResumeWithNewDriver: a crash simulated by a new driver (nothing in
// memory) mid-upload; the new one resumes from what MAAS holds and the
// lab receives each byte once, the content complete with its SHA-256.
func TestResumeWithNewDriver(t *testing.T) {
	l := startLab(t, lab.Config{})
	content, ref := testImage(3*drivers.ImageChunkSize + 9)
	first := newTestDriver(t, l, nil)
	up, err := first.StartImageUpload(testCtx(t), ref)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if up, err = first.UploadImageChunk(testCtx(t), up, content[up.Offset:up.Offset+drivers.ImageChunkSize]); err != nil {
			t.Fatal(err)
		}
	}
	second := newTestDriver(t, l, nil)
	up, err = second.StartImageUpload(testCtx(t), ref)
	if err != nil || up.Offset != 2*drivers.ImageChunkSize || up.Complete {
		t.Fatalf("resumed upload %+v %v, want offset %d", up, err, 2*drivers.ImageChunkSize)
	}
	uploadAll(t, second, ref, content)
	st := l.MAAS.ImageStats()
	if st.BytesReceived != ref.Size || st.Creates != 1 || st.ChecksumRefused != 0 {
		t.Errorf("the lab counted %+v, want %d bytes once, one create, no refusal", st, ref.Size)
	}
	if s := labImageState(t, l, ref.Name, ref.Architecture); !s.Complete || s.SHA256 != ref.SHA256 {
		t.Errorf("the lab has %+v, want complete with %s", s, ref.SHA256)
	}
}

// TestImportUnknownRelease: a release the boot source does not offer is
// refused by MAAS's selection form: Permanent, naming it; no import.
func TestImportUnknownRelease(t *testing.T) {
	l := startLab(t, lab.Config{})
	d := newTestDriver(t, l, nil)
	_, err := d.ImportImage(testCtx(t), drivers.ImageRef{Name: "ubuntu/warty", Architecture: "amd64/generic"})
	if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "warty") {
		t.Fatalf("import of a release the source lacks: %v", err)
	}
	if st := l.MAAS.ImageStats(); st.Imports != 0 {
		t.Errorf("the lab started %d imports", st.Imports)
	}
}
