package redfish

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Vendors whose answer shapes the lab can take (Options.Vendor).
//
// "dell" models iDRAC: a long operation (a volume's build, a firmware
// update) is answered 202 with no body and Location
// Managers/<id>/Jobs/JID_<n>, a Job that answers 200 throughout with
// JobState Scheduled, Running, then Completed or Failed, PercentComplete
// and Message; BIOS settings staged without an apply time stay pending
// across resets (bios.go).
//
// "hpe" models iLO: SimpleUpdate is answered 200 with no task and no
// Location; the update is followed in the UpdateService's Oem.Hpe State
// (Uploading, Updating, then Complete or Error; Idle before any update and
// after the iLO's own reset), FlashProgressPercent and Result.
const (
	vendorDell = "dell"
	vendorHPE  = "hpe"
)

// HPE UpdateService states.
const (
	hpeIdle      = "Idle"
	hpeUploading = "Uploading"
	hpeUpdating  = "Updating"
	hpeComplete  = "Complete"
	hpeError     = "Error"
)

// jobsPath is where iDRAC keeps its jobs.
var jobsPath = managerPath + "/Jobs"

// jobURI is t's Job.
func jobURI(t *task) string { return jobsPath + "/JID_" + t.id }

// answerJob answers a long operation as iDRAC does: 202, Location the Job.
func answerJob(w http.ResponseWriter, t *task) {
	w.Header().Set("Location", jobURI(t))
	w.WriteHeader(http.StatusAccepted)
}

// getJob answers a Job: 200 with its JobState throughout.
func (s *Service) getJob(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.PathValue("id"), "JID_")
	s.mu.Lock()
	now := time.Now()
	var t *task
	var after func()
	if ok {
		t, after = s.findTask(id, now)
	}
	var doc map[string]any
	if t != nil {
		doc = jobDoc(t, now)
	}
	s.mu.Unlock()
	if after != nil {
		after()
	}
	if doc == nil {
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "No job has that ID")
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

// jobDoc is t as an iDRAC Job at now. Called with mu held.
func jobDoc(t *task, now time.Time) map[string]any {
	td := taskDoc(t, now)
	state, msg := "Running", "Job in progress."
	switch {
	case t.state == taskCompleted:
		state, msg = "Completed", "Job completed successfully."
	case t.state == taskException:
		state = "Failed"
	case t.begin.IsZero():
		state, msg = "Scheduled", "Task successfully scheduled."
	}
	for _, m := range t.messages {
		if t.state != taskRunning {
			msg = m.text
		}
	}
	return map[string]any{"@odata.type": "#DellJob.v1_5_0.DellJob", "@odata.id": jobURI(t), "Id": "JID_" + t.id,
		"Name": t.name, "JobState": state, "PercentComplete": td["PercentComplete"], "Message": msg,
		"TargetSettingsURI": t.target, "StartTime": td["StartTime"]}
}

// answerNoTask answers an update as iLO does: 200, a success message, no
// task; the update is followed in the UpdateService. Its task is hidden.
func (s *Service) answerNoTask(w http.ResponseWriter, t *task) {
	s.mu.Lock()
	t.hidden = true
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"error": map[string]any{"code": "iLO.0.10.ExtendedInfo",
		"message":               "See @Message.ExtendedInfo for more information.",
		"@Message.ExtendedInfo": []any{map[string]any{"MessageId": "Base.1.4.Success"}}}})
}

// hpeUpdateService adds iLO's Oem.Hpe update state to doc. Called with mu
// held.
func (s *Service) hpeUpdateService(doc map[string]any) {
	l := s.lab
	state, pct := l.hpe.state, 0
	if state == "" {
		state = hpeIdle
	}
	if r := l.run; r != nil {
		state = hpeUploading
		if !r.t.begin.IsZero() {
			state = hpeUpdating
			pct, _ = taskDoc(r.t, time.Now())["PercentComplete"].(int)
		}
	}
	if state == hpeComplete {
		pct = 100
	}
	hpe := map[string]any{"State": state, "FlashProgressPercent": pct}
	if state == hpeError {
		hpe["Result"] = map[string]any{"MessageId": "iLO.2.14.UpdateFailed", "MessageArgs": []string{l.hpe.message}}
	}
	doc["Oem"] = map[string]any{"Hpe": hpe}
}

// hpeState is the outcome iLO's UpdateService shows of the last update.
type hpeState struct{ state, message string }

// related is the resource an inventory item is the firmware of; with
// Vendor "dell" a PCIe device is named as iDRAC names it (idracPCIeID).
func (s *Service) related(it FirmwareItem) string {
	p := relatedItem(it)
	if dev, ok := strings.CutPrefix(p, pcieDevicesPath+"/"); ok && s.o.Vendor == vendorDell {
		return pcieDevicesPath + "/" + idracPCIeID(dev)
	}
	return p
}

// idracPCIeID is iDRAC's Id of the PCIe device at PCI address addr
// (0000:3b:00.0): its bus and device numbers in decimal ("59-0"), as
// Linux's predictable interface names write them (enp59s0). addr as it is
// when it is no PCI address.
func idracPCIeID(addr string) string {
	var seg, bus, dev, fn int
	if n, err := fmt.Sscanf(addr, "%04x:%02x:%02x.%d", &seg, &bus, &dev, &fn); n != 4 || err != nil {
		return addr
	}
	return strconv.Itoa(bus) + "-" + strconv.Itoa(dev)
}
