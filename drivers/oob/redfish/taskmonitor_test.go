package redfish_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// TestUpdateFollowedByItsTask: the lab answers an update as OpenBMC's
// bmcweb does (Location Tasks/N/Monitor, which answers 204 once the task
// completed and 404 after; the Task in the body). The handle is the Task
// resource, read to Done (and to Failed with the BMC's message for a bad
// image); a handle that is a monitor is Done at its 204. Counted from the
// lab: the version installed.
func TestUpdateFollowedByItsTask(t *testing.T) {
	_, b, s, _ := lab(t, quick(simrf.Options{}))
	d := withSettings(t, nil)
	img := imageServer(t)
	ctx := t.Context()
	h, err := d.StartFirmwareUpdate(ctx, b, drivers.FirmwareUpdate{Targets: []string{"BIOS"}, ImageURL: img.URL + "/bios/2.19.1", Version: "2.19.1"})
	if err != nil || strings.HasSuffix(h, "/Monitor") {
		t.Fatalf("start: handle %q, %v (want the Task resource)", h, err)
	}
	follow := func(h string) drivers.Result {
		t.Helper()
		for i := 0; i < 200; i++ {
			r, err := d.FirmwareUpdateStatus(ctx, b, h)
			if err != nil {
				t.Fatalf("status %s: %v", h, err)
			}
			if r.Status != drivers.StatusInProgress {
				return r
			}
			time.Sleep(30 * time.Millisecond)
		}
		t.Fatalf("update %s still in progress after 6s", h)
		return drivers.Result{}
	}
	if r := follow(h); r.Status != drivers.StatusDone || s.PendingFirmware()["BIOS"] != "2.19.1" {
		t.Fatalf("update: %+v, pending %v", r, s.PendingFirmware())
	}
	if r := follow(h); r.Status != drivers.StatusDone {
		t.Fatalf("the same update read again: %+v", r)
	}
	h, err = d.StartFirmwareUpdate(ctx, b, drivers.FirmwareUpdate{Targets: []string{"GPU.SXM.1"}, ImageURL: img.URL + "/gpu/96.00.AF.00.01", Version: "96.00.AF.00.01"})
	if err != nil {
		t.Fatal(err)
	}
	if r := follow(h + "/Monitor"); r.Status != drivers.StatusDone || s.PendingFirmware()["GPU.SXM.1"] != "96.00.AF.00.01" {
		t.Fatalf("update followed by its monitor: %+v, pending %v", r, s.PendingFirmware())
	}
	h, err = d.StartFirmwareUpdate(ctx, b, drivers.FirmwareUpdate{Targets: []string{"BIOS"}, ImageURL: img.URL + "/junk", Version: "2.20.0"})
	if err != nil {
		t.Fatal(err)
	}
	if r := follow(h); r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "SLIPWAY-LAB-FIRMWARE") {
		t.Fatalf("bad image: %+v", r)
	}
	h, err = d.StartFirmwareUpdate(ctx, b, drivers.FirmwareUpdate{Targets: []string{"BIOS"}, ImageURL: img.URL + "/junk", Version: "2.20.0"})
	if err != nil {
		t.Fatal(err)
	}
	if r := follow(h + "/Monitor"); r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "SLIPWAY-LAB-FIRMWARE") {
		t.Fatalf("bad image followed by its monitor (204 at any end): %+v", r)
	}
}

// TestUpdateMessagesHideImageCredentials: an image URL's user
// information and query (a presigned URL's token) reach the BMC, and
// never the Result, though the BMC's task messages quote the URL (the
// lab's do, as iDRAC's and bmcweb's download errors do).
func TestUpdateMessagesHideImageCredentials(t *testing.T) {
	_, b, _, _ := lab(t, quick(simrf.Options{}))
	d := withSettings(t, nil)
	img := imageServer(t)
	u := strings.Replace(img.URL, "http://", "http://fwuser:fw-Secret-77@", 1)
	for _, path := range []string{"/junk?X-Amz-Signature=sig-Secret-88", "/no-such-image/x/y?token=tok-Secret-99"} {
		h, err := d.StartFirmwareUpdate(t.Context(), b, drivers.FirmwareUpdate{Targets: []string{"BIOS"}, ImageURL: u + path, Version: "2.20.0"})
		if err != nil {
			t.Fatal(err)
		}
		var r drivers.Result
		for i := 0; i < 200; i++ {
			if r, err = d.FirmwareUpdateStatus(t.Context(), b, h); err != nil || r.Status != drivers.StatusInProgress {
				break
			}
			time.Sleep(30 * time.Millisecond)
		}
		if err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "failed") {
			t.Fatalf("%s: %+v %v", path, r, err)
		}
		for _, secret := range []string{"fwuser", "Secret-77", "Secret-88", "Secret-99"} {
			if strings.Contains(r.Message, secret) {
				t.Fatalf("%s: the Result quotes %s: %s", path, secret, r.Message)
			}
		}
	}
}

// TestPushMessagesHideImageCredentials: the driver's own fetch of an
// image to push it names the URL without its user information or query,
// whether the image is refused or cannot be fetched.
func TestPushMessagesHideImageCredentials(t *testing.T) {
	_, b, s, _ := lab(t, quick(simrf.Options{}))
	s.OnlyMultipartPush()
	d := withSettings(t, nil)
	img := imageServer(t)
	withCreds := strings.Replace(img.URL, "http://", "http://fwuser:fw-Secret-77@", 1)
	for _, u := range []string{withCreds + "/bios/2.19.1?token=tok-Secret-88", "http://fwuser:fw-Secret-77@127.0.0.1:1/b.bin?token=tok-Secret-88"} {
		_, err := d.StartFirmwareUpdate(t.Context(), b, drivers.FirmwareUpdate{Targets: []string{"BIOS"}, ImageURL: u, SHA256: strings.Repeat("0", 64)})
		if err == nil {
			t.Fatalf("%s: pushed", u)
		}
		for _, secret := range []string{"fwuser", "Secret-77", "Secret-88"} {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error quotes %s: %v", secret, err)
			}
		}
	}
	if n := s.Updates().SimpleUpdates; n != 0 {
		t.Fatalf("the BMC started %d updates", n)
	}
}

// TestVolumeBuildFailureSeen: a controller that accepts a layout and then
// fails the build: its task monitor answers 204 at the end (as OpenBMC's
// bmcweb answers for a failed task too), and the Task reads Exception.
// CreateVolume is Failed with the controller's reason, not Done; counted
// from the lab: no volume.
func TestVolumeBuildFailureSeen(t *testing.T) {
	d, b, s, _ := lab(t, quick(simrf.Options{}))
	s.FailVolumeBuild("drive Disk.Bay.1 failed during the build")
	r, err := d.CreateVolume(t.Context(), b, drivers.Volume{Name: "os", Level: drivers.RAID1, Drives: []string{"0", "1"}, Boot: true})
	if err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "Disk.Bay.1 failed during the build") {
		t.Fatalf("a failed build: %+v %v", r, err)
	}
	if v := s.Volumes(); len(v) != 0 {
		t.Fatalf("volumes: %+v", v)
	}
	r, err = d.CreateVolume(t.Context(), b, drivers.Volume{Name: "os", Level: drivers.RAID1, Drives: []string{"0", "1"}, Boot: true})
	if err != nil || r.Status != drivers.StatusDone || len(s.Volumes()) != 1 {
		t.Fatalf("the build again: %+v %v, volumes %+v", r, err, s.Volumes())
	}
}
