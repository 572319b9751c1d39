package redfish

import (
	"strings"
	"testing"
	"time"
)

// TestDellJobShape: with Vendor "dell" a volume's POST is answered 202
// with no body and Location a Job under the Manager, which answers 200
// with JobState Scheduled or Running while the controller builds, then
// Completed (the lab's volume built).
func TestDellJobShape(t *testing.T) {
	s, _, ca := start(t, Options{Vendor: "dell"})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	code, loc, body := post(t, c, volumesPath, map[string]any{"Name": "os", "RAIDType": "RAID1",
		"Links": map[string]any{"Drives": []any{map[string]any{"@odata.id": controllerPath + "/Drives/Disk.Bay.0"}, map[string]any{"@odata.id": controllerPath + "/Drives/Disk.Bay.1"}}}})
	if code != 202 || !strings.HasPrefix(loc, jobsPath+"/JID_") || strings.TrimSpace(body) != "" {
		t.Fatalf("volume POST: %d %q %q", code, loc, body)
	}
	if st := getDoc(t, c, loc)["JobState"]; st != "Scheduled" && st != "Running" {
		t.Fatalf("job while building: %v", st)
	}
	time.Sleep(volumeBuild + 50*time.Millisecond)
	if job := getDoc(t, c, loc); job["JobState"] != "Completed" || job["PercentComplete"] != float64(100) {
		t.Fatalf("job after the build: %v", job)
	}
	if vs := s.Volumes(); len(vs) != 1 || vs[0].Building {
		t.Fatalf("volumes: %+v", vs)
	}
}

// TestHPEUpdateShape: with Vendor "hpe" SimpleUpdate is answered 200
// with no task and no Location, no task is listed, and the UpdateService's
// Oem.Hpe State reads the update (Uploading or Updating, then Complete).
func TestHPEUpdateShape(t *testing.T) {
	srv, _ := images(t, nil)
	s, _, ca := start(t, Options{Vendor: "hpe", UpdateDuration: 300 * time.Millisecond})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	code, loc, _ := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": srv.URL + "/bios/2.19.1"})
	if code != 200 || loc != "" {
		t.Fatalf("SimpleUpdate: %d %q", code, loc)
	}
	if n := getDoc(t, c, tasksPath)["Members@odata.count"]; n != float64(0) {
		t.Fatalf("%v tasks listed", n)
	}
	hpe := func() map[string]any {
		oem, _ := getDoc(t, c, updateServicePath)["Oem"].(map[string]any)
		h, _ := oem["Hpe"].(map[string]any)
		return h
	}
	if st := hpe()["State"]; st != "Uploading" && st != "Updating" {
		t.Fatalf("while it runs: %v", hpe())
	}
	deadline := time.Now().Add(5 * time.Second)
	for hpe()["State"] != "Complete" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if h := hpe(); h["State"] != "Complete" || h["FlashProgressPercent"] != float64(100) || s.PendingFirmware()["BIOS"] != "2.19.1" {
		t.Fatalf("after: %v, pending %v", h, s.PendingFirmware())
	}
}
