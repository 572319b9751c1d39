package redfish

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func driveRefs(bays ...string) []map[string]string {
	out := make([]map[string]string, len(bays))
	for i, b := range bays {
		out[i] = map[string]string{"@odata.id": controllerPath + "/Drives/Disk.Bay." + b}
	}
	return out
}

// TestStorageAndVolumes: gofish reads the controller, its drives (bay in
// PhysicalLocation) and volumes; a RAID-1 volume is built (a task), a
// layout the controller cannot build is refused with the reason, and a
// volume is deleted.
func TestStorageAndVolumes(t *testing.T) {
	s, _, ca := start(t, Options{})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	st, err := system(t, c).Storage()
	if err != nil || len(st) != 1 || st[0].ID != ControllerID {
		t.Fatalf("storage %v %v", st, err)
	}
	drives, err := st[0].Drives()
	if err != nil || len(drives) != 4 {
		t.Fatalf("drives %v %v", drives, err)
	}
	for _, d := range drives {
		if d.ID != "Disk.Bay."+strconv.Itoa(d.PhysicalLocation.PartLocation.LocationOrdinalValue) || d.CapacityBytes == 0 {
			t.Fatalf("drive %s: bay %d, %d bytes", d.ID, d.PhysicalLocation.PartLocation.LocationOrdinalValue, d.CapacityBytes)
		}
	}
	code, loc, _ := post(t, c, volumesPath, map[string]any{"Name": "os", "RAIDType": "RAID1", "Links": map[string]any{"Drives": driveRefs("0", "1")}})
	if code != http.StatusAccepted {
		t.Fatalf("create: %d", code)
	}
	if doc := followTask(t, c, loc); doc["TaskState"] != taskCompleted {
		t.Fatalf("task %v", doc)
	}
	vols, err := st[0].Volumes()
	if err != nil || len(vols) != 1 || vols[0].RAIDType != "RAID1" || vols[0].Name != "os" || vols[0].CapacityBytes != 1920383410176 || vols[0].Status.State != "Enabled" {
		t.Fatalf("volumes %+v %v", vols, err)
	}
	if vd, err := vols[0].Drives(); err != nil || len(vd) != 2 {
		t.Fatalf("volume drives %v %v", vd, err)
	}
	for _, tc := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"RAIDType": "RAID1", "Links": map[string]any{"Drives": driveRefs("2")}}, "RAID1 cannot be built over 1 drives"},
		{map[string]any{"RAIDType": "RAID1", "Links": map[string]any{"Drives": driveRefs("1", "2")}}, "Disk.Bay.1 is a member of volume Disk.Virtual.1"},
		{map[string]any{"RAIDType": "RAID1", "Links": map[string]any{"Drives": driveRefs("2", "9")}}, "is not a drive of this controller"},
		{map[string]any{"RAIDType": "RAID1", "CapacityBytes": int64(4e12), "Links": map[string]any{"Drives": driveRefs("2", "3")}}, "is more than the"},
		{map[string]any{"RAIDType": "RAID7", "Links": map[string]any{"Drives": driveRefs("2", "3")}}, "not one the controller supports"},
		{map[string]any{"RAIDType": "RAID1", "Links": map[string]any{"Drives": driveRefs("2", "2")}}, "named twice"},
	} {
		code, _, body := post(t, c, volumesPath, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Fatalf("%v: %d %s", tc.body, code, body)
		}
	}
	s.RefuseVolumes("the controller is in a foreign configuration state")
	if code, _, body := post(t, c, volumesPath, map[string]any{"RAIDType": "RAID0", "Drives": driveRefs("3")}); code != http.StatusBadRequest || !strings.Contains(body, "foreign") {
		t.Fatalf("refused: %d %s", code, body)
	}
	s.RefuseVolumes("")
	if _, err := c.Delete(volumesPath + "/Disk.Virtual.1"); err != nil {
		t.Fatal(err)
	}
	if v := s.Volumes(); len(v) != 0 {
		t.Fatalf("after delete: %v", v)
	}
	if st := s.Updates(); st.VolumesCreated != 1 || st.VolumesDeleted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestBIOSRefusals: an unknown attribute, a value of the wrong type and
// an attribute the BMC keeps read-only are each refused with 400 naming
// it, and nothing is staged.
func TestBIOSRefusals(t *testing.T) {
	s, _, ca := start(t, Options{})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	s.RefuseBIOS("ProcTurboMode")
	for _, tc := range []struct {
		attrs map[string]any
		want  string
	}{
		{map[string]any{"NoSuchAttribute": "x"}, "PropertyUnknown"},
		{map[string]any{"ProcCoreDisable": "two"}, "PropertyValueTypeError"},
		{map[string]any{"ProcTurboMode": "Disabled"}, "PropertyNotWritable"},
	} {
		resp, err := c.Patch(settingsPath, map[string]any{"Attributes": tc.attrs})
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%v staged", tc.attrs)
		}
		for k := range tc.attrs {
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), "400") {
				t.Fatalf("%v: %v", tc.attrs, err)
			}
		}
	}
	if _, pending := s.BIOS(); len(pending) != 0 {
		t.Fatalf("staged %v", pending)
	}
}
