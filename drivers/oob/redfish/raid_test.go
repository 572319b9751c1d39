package redfish_test

import (
	"context"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// TestStorageUnreadableDrivesIsAnError: a RAID controller whose drives
// the BMC does not answer for is an error naming the controller (the BMC
// did not answer: Transient), not a controller without drives; and no
// volume is built against the drives that were read.
func TestStorageUnreadableDrivesIsAnError(t *testing.T) {
	d, b, s, _ := lab(t, simrf.Options{})
	ctx := context.Background()
	drives, _, err := d.Storage(ctx, b)
	if err != nil || len(drives) != len(simrf.DefaultDrives()) {
		t.Fatalf("before the fault: %d drives, %v", len(drives), err)
	}
	s.DropDriveReads(2)
	drives, _, err = d.Storage(ctx, b)
	if err == nil {
		t.Fatalf("Storage with drive 2 unreadable: no error, %d drives", len(drives))
	}
	if c := drivers.Classify(err); c != drivers.Transient {
		t.Errorf("class %s, want %s: %v", c, drivers.Transient, err)
	}
	if !strings.Contains(err.Error(), simrf.ControllerID) {
		t.Errorf("the error does not name controller %s: %v", simrf.ControllerID, err)
	}
	res, err := d.CreateVolume(ctx, b, drivers.Volume{Name: "os", Level: drivers.RAID1, Drives: []string{"0", "1"}, Boot: true})
	if err == nil || drivers.Classify(err) != drivers.Transient {
		t.Errorf("CreateVolume with drive 2 unreadable: %+v, %v; want a Transient error", res, err)
	}
	if v := s.Volumes(); len(v) != 0 {
		t.Errorf("the lab built %d volumes while its drives could not be read", len(v))
	}
	s.DropDriveReads()
	if drives, _, err = d.Storage(ctx, b); err != nil || len(drives) != len(simrf.DefaultDrives()) {
		t.Errorf("after the fault: %d drives, %v", len(drives), err)
	}
}

// TestCreateVolumeNamesTheMissingBay: a volume over a bay the controller
// has not is Failed naming that bay, not the first one asked for.
func TestCreateVolumeNamesTheMissingBay(t *testing.T) {
	d, b, s, _ := lab(t, simrf.Options{})
	res, err := d.CreateVolume(context.Background(), b, drivers.Volume{Name: "os", Level: drivers.RAID1, Drives: []string{"0", "37"}})
	if err != nil || res.Status != drivers.StatusFailed {
		t.Fatalf("CreateVolume over bay 37: %+v, %v; want Failed", res, err)
	}
	if !strings.Contains(res.Message, "no drive 37") || strings.Contains(res.Message, "no drive 0") {
		t.Errorf("the failure does not name bay 37 (alone): %s", res.Message)
	}
	if v := s.Volumes(); len(v) != 0 {
		t.Errorf("the lab built %d volumes", len(v))
	}
}
