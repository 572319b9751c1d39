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
}
