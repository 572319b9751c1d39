package redfish

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// getStatus GETs uri with the client's session: its status and JSON body.
func getStatus(t *testing.T, hc *http.Client, base, token, uri string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+uri, nil)
	req.Header.Set("X-Auth-Token", token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", uri, err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc
}

// TestTaskMonitorAsOpenBMC: a long operation answers 202 with its task
// monitor in Location (Tasks/N/Monitor, as OpenBMC's bmcweb does) and the
// Task in the body; the Task resource answers 200 with its TaskState
// throughout (it is a resource, not the monitor); the monitor answers 202
// while the task runs, 204 once it completed, and 404 after that.
func TestTaskMonitorAsOpenBMC(t *testing.T) {
	s, _, ca := start(t, Options{UpdateDuration: 400 * time.Millisecond})
	hc := rawClient(ca)
	token, _ := loginRaw(t, hc, s)
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := images(t, nil)
	code, loc, body := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": srv.URL + "/bios/2.19.1"})
	var accepted map[string]any
	_ = json.Unmarshal([]byte(body), &accepted)
	taskURI, _ := accepted["@odata.id"].(string)
	if code != http.StatusAccepted || !strings.HasSuffix(loc, "/Monitor") || taskURI+"/Monitor" != loc || accepted["TaskMonitor"] != loc {
		t.Fatalf("SimpleUpdate: %d, Location %q, task %q, TaskMonitor %v", code, loc, taskURI, accepted["TaskMonitor"])
	}
	base := s.URL()
	if code, doc := getStatus(t, hc, base, token, taskURI); code != http.StatusOK || doc["TaskState"] != taskRunning {
		t.Fatalf("the running task's resource: %d %v (want 200 Running)", code, doc["TaskState"])
	}
	if code, doc := getStatus(t, hc, base, token, loc); code != http.StatusAccepted || doc["TaskState"] != taskRunning {
		t.Fatalf("the running task's monitor: %d %v (want 202 Running)", code, doc["TaskState"])
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, doc := getStatus(t, hc, base, token, taskURI)
		if doc["TaskState"] == taskCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task still %v after 10s", doc["TaskState"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := getStatus(t, hc, base, token, loc); code != http.StatusNoContent {
		t.Fatalf("the completed task's monitor: %d (want 204)", code)
	}
	if code, _ := getStatus(t, hc, base, token, loc); code != http.StatusNotFound {
		t.Fatalf("the monitor after its 204: %d (want 404)", code)
	}
	if code, doc := getStatus(t, hc, base, token, taskURI); code != http.StatusOK || doc["TaskState"] != taskCompleted || doc["TaskMonitor"] != nil {
		t.Fatalf("the completed task's resource: %d %v, TaskMonitor %v", code, doc["TaskState"], doc["TaskMonitor"])
	}
	if s.PendingFirmware()["BIOS"] != "2.19.1" {
		t.Fatalf("pending firmware %v", s.PendingFirmware())
	}
}

// TestVolumeBuildFails: FailVolumeBuild makes the controller accept a
// layout and fail its build: the monitor answers 204 (as bmcweb's does
// for any end), the Task reads Exception with the reason, and the volume
// is gone.
func TestVolumeBuildFails(t *testing.T) {
	s, _, ca := start(t, Options{})
	hc := rawClient(ca)
	token, _ := loginRaw(t, hc, s)
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	s.FailVolumeBuild("drive Disk.Bay.1 failed during the build")
	code, loc, _ := post(t, c, volumesPath, map[string]any{"Name": "os", "RAIDType": "RAID1", "Links": map[string]any{"Drives": driveRefs("0", "1")}})
	if code != http.StatusAccepted {
		t.Fatalf("POST volume: %d", code)
	}
	doc := followTask(t, c, loc)
	msgs, _ := doc["Messages"].([]any)
	if doc["TaskState"] != taskException || len(msgs) != 1 || !strings.Contains(msgs[0].(map[string]any)["Message"].(string), "Disk.Bay.1 failed") {
		t.Fatalf("the build's task: %v %v", doc["TaskState"], msgs)
	}
	if code, _ := getStatus(t, hc, s.URL(), token, loc); code != http.StatusNoContent {
		t.Fatalf("the failed task's monitor: %d (want 204, as bmcweb)", code)
	}
	if v := s.Volumes(); len(v) != 0 {
		t.Fatalf("volumes after a failed build: %+v", v)
	}
}
