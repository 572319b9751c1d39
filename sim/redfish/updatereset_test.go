package redfish

import (
	"net/http"
	"testing"
	"time"
)

// TestResetDuringUpdateCounted: a system reset while a firmware update
// runs (ComputerSystem.Reset, or a boot the service did not see, as an
// IPMI power cycle) is what can brick a real server mid-flash; the lab
// counts each, so a test of the engine can assert it never does one. A
// reset after the update ended is not counted.
func TestResetDuringUpdateCounted(t *testing.T) {
	s, _, ca := start(t, Options{UpdateDuration: 600 * time.Millisecond})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := images(t, nil)
	code, loc, _ := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": srv.URL + "/bios/2.19.1"})
	if code != http.StatusAccepted {
		t.Fatalf("SimpleUpdate: %d", code)
	}
	if code, _, body := post(t, c, systemPath+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "ForceRestart"}); code >= 300 {
		t.Fatalf("reset: %d %s", code, body)
	}
	s.SystemReset()
	if n := s.Updates().ResetsDuringUpdate; n != 2 {
		t.Fatalf("%d resets during the update counted, want 2", n)
	}
	if doc := followTask(t, c, loc); doc["TaskState"] != taskCompleted {
		t.Fatalf("update: %v", doc["TaskState"])
	}
	s.SystemReset()
	if u := s.Updates(); u.ResetsDuringUpdate != 2 || s.Firmware()[1].Version != "2.19.1" {
		t.Fatalf("after the update: %+v, BIOS %s", u, s.Firmware()[1].Version)
	}
}
