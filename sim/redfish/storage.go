package redfish

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The system's Storage: one RAID controller with its drives and volumes.
var (
	storagePath    = systemPath + "/Storage"
	controllerPath = storagePath + "/" + ControllerID
	volumesPath    = controllerPath + "/Volumes"
)

// ControllerID is the RAID controller's Storage Id.
const ControllerID = "RAID.Integrated.1"

// volumeBuild is how long the controller takes to build a volume.
const volumeBuild = 200 * time.Millisecond

// Drive is a physical drive behind the system's RAID controller.
type Drive struct {
	Bay           int // its bay; its Id is Disk.Bay.<bay>
	Model         string
	CapacityBytes int64
}

func (d Drive) id() string { return "Disk.Bay." + strconv.Itoa(d.Bay) }

// DefaultDrives are four 1.92 TB NVMe drives in bays 0 to 3.
func DefaultDrives() []Drive {
	out := make([]Drive, 4)
	for i := range out {
		out[i] = Drive{Bay: i, Model: "Dell Ent NVMe CM6 RI 1.92TB", CapacityBytes: 1920383410176}
	}
	return out
}

// Volume is a RAID volume the controller has (Service.Volumes).
type Volume struct {
	ID, Name      string
	RAIDType      string // RAID0, RAID1, RAID5, RAID6, RAID10
	Drives        []int  // member bays
	CapacityBytes int64
	Building      bool // its build task has not finished
}

type volume struct {
	Volume
}

// raidMin is the fewest members of each RAID type the controller builds
// (RAID10 also needs an even count).
var raidMin = map[string]int{"RAID0": 1, "RAID1": 2, "RAID5": 3, "RAID6": 4, "RAID10": 4}

// maxVolumes bounds the volumes of the controller.
const maxVolumes = 64

func (s *Service) storageRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+storagePath, s.getStorageCollection)
	mux.HandleFunc("GET "+controllerPath, s.getController)
	mux.HandleFunc("GET "+controllerPath+"/Drives/{id}", s.getDrive)
	mux.HandleFunc("GET "+volumesPath, s.getVolumes)
	mux.HandleFunc("POST "+volumesPath, s.createVolume)
	mux.HandleFunc("GET "+volumesPath+"/{id}", s.getVolume)
	mux.HandleFunc("DELETE "+volumesPath+"/{id}", s.deleteVolume)
}

func link(p string) map[string]any { return map[string]any{"@odata.id": p} }

func (s *Service) getStorageCollection(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"@odata.type": "#StorageCollection.StorageCollection", "@odata.id": storagePath, "Name": "Storage Collection",
		"Members": []any{link(controllerPath)}, "Members@odata.count": 1,
	})
}

func (s *Service) getController(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	drives := make([]any, 0, len(s.lab.drives))
	for _, d := range s.lab.drives {
		drives = append(drives, link(controllerPath+"/Drives/"+d.id()))
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"@odata.type": "#Storage.v1_9_0.Storage", "@odata.id": controllerPath, "Id": ControllerID, "Name": "RAID controller",
		"Status": map[string]any{"State": "Enabled", "Health": "OK"},
		"StorageControllers": []any{map[string]any{
			"@odata.id": controllerPath + "#/StorageControllers/0", "MemberId": "0", "Name": "PERC H965i Front",
			"Status": map[string]any{"State": "Enabled", "Health": "OK"}, "SupportedRAIDTypes": raidTypes(),
		}},
		"Drives": drives, "Drives@odata.count": len(drives), "Volumes": link(volumesPath),
	})
}

func raidTypes() []string {
	out := make([]string, 0, len(raidMin))
	for t := range raidMin {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

func (s *Service) getDrive(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.lab.drives {
		if d.id() != r.PathValue("id") {
			continue
		}
		if slices.Contains(s.lab.faults.dropDrives, d.Bay) {
			drop(w)
			return
		}
		var vols []any
		for _, v := range s.lab.volumes {
			if slices.Contains(v.Drives, d.Bay) {
				vols = append(vols, link(volumesPath+"/"+v.ID))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.type": "#Drive.v1_9_0.Drive", "@odata.id": controllerPath + "/Drives/" + d.id(), "Id": d.id(),
			"Name": d.Model, "Model": d.Model, "CapacityBytes": d.CapacityBytes, "MediaType": "SSD", "Protocol": "NVMe",
			"Status": map[string]any{"State": "Enabled", "Health": "OK"},
			"PhysicalLocation": map[string]any{"PartLocation": map[string]any{
				"LocationType": "Bay", "LocationOrdinalValue": d.Bay, "ServiceLabel": d.id()}},
			"Links": map[string]any{"Volumes": vols, "Volumes@odata.count": len(vols)},
		})
		return
	}
	writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "The controller has no drive of that ID")
}

func (s *Service) getVolumes(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.advance(time.Now())
	members := make([]any, 0, len(s.lab.volumes))
	for _, v := range s.lab.volumes {
		members = append(members, link(volumesPath+"/"+v.ID))
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"@odata.type": "#VolumeCollection.VolumeCollection", "@odata.id": volumesPath, "Name": "Volumes",
		"Members": members, "Members@odata.count": len(members),
	})
}

func (s *Service) getVolume(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.advance(time.Now())
	var doc map[string]any
	for _, v := range s.lab.volumes {
		if v.ID == r.PathValue("id") {
			doc = volumeDoc(v.Volume)
		}
	}
	s.mu.Unlock()
	if doc == nil {
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "The controller has no volume of that ID")
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

func volumeDoc(v Volume) map[string]any {
	drives := make([]any, 0, len(v.Drives))
	for _, b := range v.Drives {
		drives = append(drives, link(controllerPath+"/Drives/"+Drive{Bay: b}.id()))
	}
	state := "Enabled"
	if v.Building {
		state = "Starting"
	}
	return map[string]any{
		"@odata.type": "#Volume.v1_9_0.Volume", "@odata.id": volumesPath + "/" + v.ID, "Id": v.ID, "Name": v.Name,
		"RAIDType": v.RAIDType, "CapacityBytes": v.CapacityBytes, "Encrypted": false,
		"Status": map[string]any{"State": state, "Health": "OK"},
		"Links":  map[string]any{"Drives": drives, "Drives@odata.count": len(drives)},
	}
}

// volumeRequest is a POST to the Volumes collection. Drives may be in
// Links (current schema) or at the top (older BMCs took it there).
type volumeRequest struct {
	Name          string
	RAIDType      string
	CapacityBytes int64
	Links         struct{ Drives []map[string]string }
	Drives        []map[string]string
}

// createVolume builds a volume (202 and a task, volumeBuild long), or
// refuses a layout the controller cannot build with 400 and the reason.
func (s *Service) createVolume(w http.ResponseWriter, r *http.Request) {
	var req volumeRequest
	if !readJSON(w, r, &req) {
		return
	}
	s.mu.Lock()
	v, id, msg := s.layout(req)
	if msg != "" {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, id, msg)
		return
	}
	s.lab.volSeq++
	v.ID = "Disk.Virtual." + strconv.Itoa(s.lab.volSeq)
	if v.Name == "" {
		v.Name = v.ID
	}
	v.Building = true
	vol := &volume{Volume: v}
	s.lab.volumes = append(s.lab.volumes, vol)
	s.lab.stats.VolumesCreated++
	t := s.newTask("Volume "+v.Name, volumesPath)
	t.begin, t.done = t.start, t.start.Add(volumeBuild)
	t.finish = func(time.Time) { vol.Building = false }
	t.messages = append(t.messages, taskMessage{"Base.1.8.Created", "Volume " + v.ID + " is built", "OK"})
	if why := s.lab.faults.failBuild; why != "" {
		s.lab.faults.failBuild = ""
		t.finish = func(at time.Time) { s.buildFailed(t, vol, why, at) }
		t.messages = nil
	}
	s.mu.Unlock()
	s.answerTask(w, t)
}

// layout checks a volume request against the controller: the message ID
// and the reason when it cannot build it. Called with mu held.
func (s *Service) layout(req volumeRequest) (Volume, string, string) {
	v := Volume{Name: req.Name, RAIDType: req.RAIDType}
	refs := append(slices.Clone(req.Links.Drives), req.Drives...)
	minN, ok := raidMin[req.RAIDType]
	switch {
	case s.lab.faults.refuseVolumes != "":
		return v, "Base.1.8.ActionNotSupported", s.lab.faults.refuseVolumes
	case len(req.Name) > 64:
		return v, "Base.1.8.PropertyValueFormatError", "Name is longer than 64 characters"
	case !ok:
		return v, "Base.1.8.PropertyValueNotInList", fmt.Sprintf("RAIDType %q is not one the controller supports (%s)", bounded(req.RAIDType), strings.Join(raidTypes(), ", "))
	case len(s.lab.volumes) >= maxVolumes:
		return v, "Base.1.8.CreateLimitReachedForResource", "The controller has as many volumes as it takes"
	case len(refs) > len(s.lab.drives):
		return v, "Base.1.8.PropertyValueConflict", "More drives are named than the controller has"
	}
	smallest := int64(0)
	for _, ref := range refs {
		d, msg := s.memberDrive(ref["@odata.id"], v.Drives)
		if msg != "" {
			return v, "Base.1.8.PropertyValueConflict", msg
		}
		v.Drives = append(v.Drives, d.Bay)
		if smallest == 0 || d.CapacityBytes < smallest {
			smallest = d.CapacityBytes
		}
	}
	n := len(v.Drives)
	if n < minN || (req.RAIDType == "RAID1" && n != 2) || (req.RAIDType == "RAID10" && n%2 != 0) {
		return v, "Base.1.8.PropertyValueConflict", fmt.Sprintf("%s cannot be built over %d drives (RAID1: 2; RAID0: 1 or more; RAID5: 3 or more; RAID6: 4 or more; RAID10: an even number, 4 or more)", req.RAIDType, n)
	}
	usable := usableBytes(req.RAIDType, n, smallest)
	switch {
	case req.CapacityBytes < 0 || req.CapacityBytes > usable:
		return v, "Base.1.8.PropertyValueConflict", fmt.Sprintf("CapacityBytes %d is more than the %d bytes %s over these drives holds", req.CapacityBytes, usable, req.RAIDType)
	case req.CapacityBytes == 0:
		v.CapacityBytes = usable
	default:
		v.CapacityBytes = req.CapacityBytes
	}
	return v, "", ""
}

// memberDrive is the drive at uri if it can join a new volume (it exists,
// is not in one, is not named twice); else why not. Called with mu held.
func (s *Service) memberDrive(uri string, chosen []int) (Drive, string) {
	for _, d := range s.lab.drives {
		if uri != controllerPath+"/Drives/"+d.id() {
			continue
		}
		if slices.Contains(chosen, d.Bay) {
			return d, "Drive " + d.id() + " is named twice"
		}
		for _, v := range s.lab.volumes {
			if slices.Contains(v.Drives, d.Bay) {
				return d, "Drive " + d.id() + " is a member of volume " + v.ID + " already"
			}
		}
		return d, ""
	}
	return Drive{}, "Drive " + bounded(uri) + " is not a drive of this controller"
}

func usableBytes(raid string, n int, smallest int64) int64 {
	switch raid {
	case "RAID1":
		return smallest
	case "RAID5":
		return int64(n-1) * smallest
	case "RAID6":
		return int64(n-2) * smallest
	case "RAID10":
		return int64(n/2) * smallest
	}
	return int64(n) * smallest
}

func (s *Service) deleteVolume(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	found := false
	for i, v := range s.lab.volumes {
		if v.ID == r.PathValue("id") {
			s.lab.volumes = append(s.lab.volumes[:i:i], s.lab.volumes[i+1:]...)
			s.lab.stats.VolumesDeleted++
			found = true
			break
		}
	}
	s.mu.Unlock()
	if !found {
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "The controller has no volume of that ID")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Volumes are the controller's volumes, in the order they were made (the
// first is the one the system boots from, as a PERC controller's first
// virtual disk is by default).
func (s *Service) Volumes() []Volume {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	out := make([]Volume, len(s.lab.volumes))
	for i, v := range s.lab.volumes {
		out[i] = v.Volume
		out[i].Drives = slices.Clone(v.Drives)
	}
	return out
}

// FailVolumeBuild makes the controller accept the next volume and fail
// its build (the task ends Exception with reason, the volume is gone), as
// a controller does when a member drive fails during the build.
func (s *Service) FailVolumeBuild(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lab.faults.failBuild = reason
}

// buildFailed ends t, the build of vol, in Exception and removes vol.
// Called with mu held.
func (s *Service) buildFailed(t *task, vol *volume, why string, at time.Time) {
	t.state, t.end = taskException, at
	t.messages = append(t.messages, taskMessage{"Base.1.8.InternalError", "The build of volume " + vol.ID + " failed: " + why, "Critical"})
	for i, x := range s.lab.volumes {
		if x == vol {
			s.lab.volumes = append(s.lab.volumes[:i:i], s.lab.volumes[i+1:]...)
			break
		}
	}
}

// DropDriveReads makes a GET of the drives in bays end its connection
// without an answer, as a BMC whose storage agent hangs does (none given:
// they answer again).
func (s *Service) DropDriveReads(bays ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lab.faults.dropDrives = slices.Clone(bays)
}

// RefuseVolumes makes the controller refuse every new volume with reason
// ("" accepts them again).
func (s *Service) RefuseVolumes(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lab.faults.refuseVolumes = reason
}
