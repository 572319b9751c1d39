package redfish_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/oob/redfish"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// followUpdate starts an update of the BIOS to version from the image
// server and follows its handle until it ends (bounded).
func followUpdate(t *testing.T, d *redfish.Driver, b drivers.BMC, img, version string) (drivers.Result, error) {
	t.Helper()
	h, err := d.StartFirmwareUpdate(t.Context(), b, drivers.FirmwareUpdate{ImageURL: img + "/bios/" + version, Version: version})
	if err != nil {
		return drivers.Result{}, err
	}
	deadline := time.Now().Add(8 * time.Second)
	r := drivers.Result{Status: drivers.StatusInProgress}
	for r.Status == drivers.StatusInProgress && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if r, err = d.FirmwareUpdateStatus(t.Context(), b, h); err != nil {
			return r, err
		}
	}
	return r, nil
}

// TestDellJobsFollowed: an iDRAC answers a volume's POST and an update
// with a Job (Managers/.../Jobs/JID_n) that reads 200 while Scheduled or
// Running: the driver follows its JobState to the end. The volume is
// built (the lab's controller says so) when CreateVolume is Done, and the
// update is Done once the lab installed the version, Failed with the
// job's message for a bad image.
func TestDellJobsFollowed(t *testing.T) {
	d, b, s, _ := lab(t, quick(simrf.Options{Vendor: "dell"}))
	img := imageServer(t).URL
	r, err := d.CreateVolume(t.Context(), b, drivers.Volume{Name: "os", Level: drivers.RAID1, Drives: []string{"0", "1"}, Boot: true})
	if err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("volume: %+v %v", r, err)
	}
	if vs := s.Volumes(); len(vs) != 1 || vs[0].Building {
		t.Fatalf("CreateVolume Done while the lab's controller has %+v", vs)
	}
	r, err = followUpdate(t, d, b, img, "2.19.1")
	if err != nil || r.Status != drivers.StatusDone || s.PendingFirmware()["BIOS"] != "2.19.1" {
		t.Fatalf("update: %+v %v, pending %v", r, err, s.PendingFirmware())
	}
	h, err := d.StartFirmwareUpdate(t.Context(), b, drivers.FirmwareUpdate{ImageURL: img + "/junk", Version: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if r, err = d.FirmwareUpdateStatus(t.Context(), b, h); err != nil || r.Status != drivers.StatusInProgress {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "not a firmware package") {
		t.Fatalf("bad image: %+v %v", r, err)
	}
}

// TestHPEUpdateWithoutTask: an iLO answers SimpleUpdate 200 with no task;
// the update is followed by the UpdateService's Oem.Hpe State and
// FlashProgressPercent: Done once the lab installed the version, Failed
// with the BMC's message for a bad image, never "without a task".
func TestHPEUpdateWithoutTask(t *testing.T) {
	d, b, s, _ := lab(t, quick(simrf.Options{Vendor: "hpe"}))
	img := imageServer(t).URL
	r, err := followUpdate(t, d, b, img, "2.19.1")
	if err != nil || r.Status != drivers.StatusDone || s.PendingFirmware()["BIOS"] != "2.19.1" {
		t.Fatalf("update: %+v %v, pending %v", r, err, s.PendingFirmware())
	}
	h, err := d.StartFirmwareUpdate(t.Context(), b, drivers.FirmwareUpdate{ImageURL: img + "/junk", Version: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if r, err = d.FirmwareUpdateStatus(t.Context(), b, h); err != nil || r.Status != drivers.StatusInProgress {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "not a firmware package") {
		t.Fatalf("bad image: %+v %v", r, err)
	}
	// The iLO's own update: it resets at once and reads Idle after, never
	// Complete to a client; the inventory then reports the version.
	h, err = d.StartFirmwareUpdate(t.Context(), b, drivers.FirmwareUpdate{ImageURL: img + "/bmc/7.10", Version: "7.10"})
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if r, err = d.FirmwareUpdateStatus(t.Context(), b, h); err != nil || r.Status != drivers.StatusInProgress {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	bmcVersion := ""
	for _, f := range s.Firmware() {
		if f.ID == "BMC" {
			bmcVersion = f.Version
		}
	}
	if err != nil || r.Status != drivers.StatusDone || bmcVersion != "7.10" {
		t.Fatalf("BMC update: %+v %v, the lab's BMC reports %s", r, err, bmcVersion)
	}
	if u := s.Updates(); u.Completed != 2 || u.Failed != 1 {
		t.Fatalf("the lab ran %+v", u)
	}
}

// TestDellJobFailureSeen: a volume build whose Job ends Failed is Failed
// with the job's message, not Done.
func TestDellJobFailureSeen(t *testing.T) {
	d, b, s, _ := lab(t, quick(simrf.Options{Vendor: "dell"}))
	s.FailVolumeBuild("drive 1 reports a media error")
	r, err := d.CreateVolume(t.Context(), b, drivers.Volume{Name: "os", Level: drivers.RAID1, Drives: []string{"0", "1"}, Boot: true})
	if err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "drive 1 reports a media error") {
		t.Fatalf("volume: %+v %v", r, err)
	}
}
