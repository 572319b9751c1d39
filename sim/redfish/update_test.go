package redfish

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/common"
	"github.com/stmcginnis/gofish/redfish"
)

// images serves lab images at /KIND/VERSION (size 4 KiB) and the bytes
// of extra at their paths; it counts the GETs.
func images(t *testing.T, extra map[string][]byte) (*httptest.Server, *int) {
	t.Helper()
	n := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*n++
		if b, ok := extra[r.URL.Path]; ok {
			_, _ = w.Write(b)
			return
		}
		kind, version, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(LabImage(kind, version, 4096))
	}))
	t.Cleanup(srv.Close)
	return srv, n
}

// post sends a JSON POST with the client's session: the answer's
// status, Location and body (an error answer's too).
func post(t *testing.T, c *gofish.APIClient, uri string, body any) (int, string, string) {
	t.Helper()
	resp, err := c.Post(uri, body)
	if err != nil {
		var e *common.Error
		if !errors.As(err, &e) {
			t.Fatalf("POST %s: %v", uri, err)
		}
		return e.HTTPReturnedStatusCode, "", err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// followTask reads the Task of a task monitor until the task is no longer
// running (at most 10 s): its document.
func followTask(t *testing.T, c *gofish.APIClient, uri string) map[string]any {
	t.Helper()
	uri = strings.TrimSuffix(uri, "/Monitor")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := c.Get(uri)
		if err != nil {
			t.Fatalf("task %s: %v", uri, err)
		}
		var doc map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if doc["TaskState"] != taskRunning {
			return doc
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("task %s still running after 10s", uri)
	return nil
}

func inventory(t *testing.T, c *gofish.APIClient) map[string]string {
	t.Helper()
	us, err := c.Service.UpdateService()
	if err != nil {
		t.Fatal(err)
	}
	inv, err := us.FirmwareInventories()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range inv {
		out[f.ID] = f.Version
	}
	return out
}

func TestLabImage(t *testing.T) {
	a, b := LabImage("gpu", "96.00.AF.00.01", 1<<16), LabImage("gpu", "96.00.AF.00.01", 1<<16)
	if !bytes.Equal(a, b) || len(a) != 1<<16 || !bytes.HasPrefix(a, []byte("SLIPWAY-LAB-FIRMWARE component=gpu version=96.00.AF.00.01\n")) {
		t.Fatalf("image %d bytes, starts %q", len(a), a[:60])
	}
	kind, v, err := parseImage(a)
	if err != nil || kind != "gpu" || v != "96.00.AF.00.01" {
		t.Fatalf("parse: %s %s %v", kind, v, err)
	}
	sum := sha256.Sum256(LabImage("bios", "2.19.1", 1<<20))
	t.Logf("sha256 of LabImage(bios, 2.19.1, 1 MiB): %s", hex.EncodeToString(sum[:]))
	if _, _, err := parseImage([]byte("MZ\x90\x00 not a lab image")); err == nil {
		t.Fatal("a foreign image parsed")
	}
}

// TestBIOSUpdatePendingUntilSystemReset: SimpleUpdate downloads the
// image (a real GET), runs a task to Completed with percent, and the BIOS
// reports the new version only after the system's reset.
func TestBIOSUpdatePendingUntilSystemReset(t *testing.T) {
	s, _, ca := start(t, Options{BIOSVersion: "2.18.0", UpdateDuration: 300 * time.Millisecond})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	srv, gets := images(t, nil)
	code, loc, _ := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": srv.URL + "/bios/2.19.1", "Targets": []string{inventoryPath + "/BIOS"}})
	if code != http.StatusAccepted || !strings.HasPrefix(loc, tasksPath+"/") {
		t.Fatalf("SimpleUpdate: %d %q", code, loc)
	}
	doc := followTask(t, c, loc)
	if doc["TaskState"] != taskCompleted || doc["PercentComplete"] != float64(100) || *gets != 1 {
		t.Fatalf("task %v, %d downloads", doc, *gets)
	}
	if v := inventory(t, c)["BIOS"]; v != "2.18.0" {
		t.Fatalf("BIOS %s before the reset", v)
	}
	if p := s.PendingFirmware(); p["BIOS"] != "2.19.1" {
		t.Fatalf("pending %v", p)
	}
	if err := system(t, c).Reset(redfish.OnResetType); err != nil {
		t.Fatal(err)
	}
	if v := inventory(t, c)["BIOS"]; v != "2.19.1" || system(t, c).BIOSVersion != "2.19.1" || len(s.PendingFirmware()) != 0 {
		t.Fatalf("after the reset: BIOS %s, system %s", v, system(t, c).BIOSVersion)
	}
	if st := s.Updates(); st.SimpleUpdates != 1 || st.Completed != 1 || st.MaxRunning != 1 {
		t.Fatalf("stats %+v", st)
	}
	if sp := s.UpdateSpans(); len(sp) != 1 || sp[0].End.Sub(sp[0].Start) < 300*time.Millisecond {
		t.Fatalf("spans %v", sp)
	}
}

// TestBMCUpdateResetsTheBMC: a BMC update completes, the BMC answers
// nothing for BMCResetDuration, then reports the new version.
func TestBMCUpdateResetsTheBMC(t *testing.T) {
	s, _, ca := start(t, Options{BMCFirmware: "7.00.00", UpdateDuration: 100 * time.Millisecond, BMCResetDuration: 500 * time.Millisecond})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := images(t, nil)
	code, loc, _ := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": srv.URL + "/bmc/7.10.30"})
	if code != http.StatusAccepted {
		t.Fatal(code)
	}
	time.Sleep(150 * time.Millisecond) // past its end: the next request finds the BMC resetting
	if _, err := c.Get(loc); err == nil {
		t.Fatal("the BMC answered during its reset")
	}
	if v := s.version(kindBMC, ""); v != "7.00.00" {
		t.Fatalf("BMC %s during its reset", v)
	}
	time.Sleep(500 * time.Millisecond)
	if doc := followTask(t, c, loc); doc["TaskState"] != taskCompleted {
		t.Fatalf("task %v", doc)
	}
	ms, err := c.Service.Managers()
	if err != nil || ms[0].FirmwareVersion != "7.10.30" || inventory(t, c)["BMC"] != "7.10.30" {
		t.Fatalf("after the reset: %v %v", ms, err)
	}
	if st := s.Updates(); st.BMCResets != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSecondUpdateRefused: while an update runs, another is refused with
// 503, a Retry-After and a message; the UpdateService reads Updating.
func TestSecondUpdateRefused(t *testing.T) {
	s, _, ca := start(t, Options{UpdateDuration: 5 * time.Second})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := images(t, nil)
	if code, _, _ := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": srv.URL + "/gpu/96.00.AF.00.01"}); code != http.StatusAccepted {
		t.Fatal(code)
	}
	code, _, body := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": srv.URL + "/nic/28.40.1000"})
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "firmware update is in progress") {
		t.Fatalf("second update: %d %s", code, body)
	}
	us, err := c.Service.UpdateService()
	if err != nil || us.Status.State != "Updating" {
		t.Fatalf("update service %+v %v", us, err)
	}
	if st := s.Updates(); st.SimpleUpdates != 1 || st.RefusedBusy != 1 || st.MaxRunning != 1 {
		t.Fatalf("stats %+v", st)
	}
	if sp := s.UpdateSpans(); len(sp) != 1 || !sp[0].End.IsZero() {
		t.Fatalf("spans %v: want the one running", sp)
	}
}

// TestBadImagesFailTheTask: an image that is not one, one for another
// component, one the server does not have and one too large each end
// the task in Exception with a message saying why; nothing changes.
func TestBadImagesFailTheTask(t *testing.T) {
	s, _, ca := start(t, Options{UpdateDuration: 50 * time.Millisecond, MaxImageBytes: 8192})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := images(t, map[string][]byte{"/junk": []byte("MZ not firmware"), "/big": LabImage("bios", "9", 10000)})
	before := inventory(t, c)
	for _, tc := range []struct{ uri, want string }{
		{srv.URL + "/junk", "no SLIPWAY-LAB-FIRMWARE header"},
		{srv.URL + "/nic/1.0", "target BIOS is a bios"},
		{srv.URL + "/missing", "404"},
		{srv.URL + "/big", "larger than the 8192 bytes"},
	} {
		body := map[string]any{"ImageURI": tc.uri}
		if tc.want == "target BIOS is a bios" {
			body["Targets"] = []string{inventoryPath + "/BIOS"}
		}
		code, loc, _ := post(t, c, simpleUpdatePath, body)
		if code != http.StatusAccepted {
			t.Fatalf("%s: %d", tc.uri, code)
		}
		doc := followTask(t, c, loc)
		msgs, _ := json.Marshal(doc["Messages"])
		if doc["TaskState"] != taskException || !strings.Contains(string(msgs), tc.want) {
			t.Fatalf("%s: %v %s", tc.uri, doc["TaskState"], msgs)
		}
	}
	if after := inventory(t, c); !equal(before, after) || len(s.PendingFirmware()) != 0 {
		t.Fatalf("inventory changed: %v -> %v", before, after)
	}
	if st := s.Updates(); st.Failed != 4 || st.Completed != 0 {
		t.Fatalf("stats %+v", st)
	}
	code, _, _ := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": "ftp://10.0.0.1/x.bin"})
	if code != http.StatusBadRequest {
		t.Fatalf("ftp ImageURI: %d", code)
	}
	code, _, body := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": srv.URL + "/bios/1", "Targets": []string{inventoryPath + "/Nope"}})
	if code != http.StatusBadRequest || !strings.Contains(body, "Nope") {
		t.Fatalf("unknown target: %d %s", code, body)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRebootMidUpdate: the BMC resets halfway through the update: it
// answers nothing for a while, then does not know the task, and the old
// version stays.
func TestRebootMidUpdate(t *testing.T) {
	s, _, ca := start(t, Options{BIOSVersion: "2.18.0", UpdateDuration: 400 * time.Millisecond, BMCResetDuration: 300 * time.Millisecond})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := images(t, nil)
	s.RebootMidUpdate()
	code, loc, _ := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": srv.URL + "/bios/2.19.1"})
	if code != http.StatusAccepted {
		t.Fatal(code)
	}
	time.Sleep(250 * time.Millisecond)
	if _, err := c.Get(loc); err == nil {
		t.Fatal("the BMC answered during its reset")
	}
	time.Sleep(400 * time.Millisecond)
	resp, err := c.Get(loc)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("the lost task: %v %v", resp, err)
	}
	if st := s.Updates(); st.Lost != 1 || st.Completed != 0 || inventory(t, c)["BIOS"] != "2.18.0" || len(s.PendingFirmware()) != 0 {
		t.Fatalf("stats %+v, inventory %v", st, inventory(t, c))
	}
	if sp := s.UpdateSpans(); len(sp) != 1 || sp[0].End.IsZero() {
		t.Fatalf("spans %v: want the lost one ended", sp)
	}
	// The BMC takes the next update.
	if code, _, _ := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": srv.URL + "/bios/2.19.1"}); code != http.StatusAccepted {
		t.Fatalf("after the reset: %d", code)
	}
}
