package redfish

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/redfishmock"
)

// Firmware component kinds, as drivers.FirmwareComponent.Kind names them.
const (
	kindBMC   = "bmc"
	kindBIOS  = "bios"
	kindNIC   = "nic"
	kindGPU   = "gpu"
	kindDrive = "drive"
)

// FirmwareItem is one member of the BMC's firmware inventory.
type FirmwareItem struct {
	ID   string // the inventory member's Id
	Kind string // bmc, bios, nic, gpu or drive
	Name string
	// Version in effect.
	Version string
	// Device: a NIC's or GPU's PCI address (0000:18:00.0), a drive's bay
	// ("0") or an NVMe drive's PCI address (its inventory item then belongs
	// to its PCIe device); "" for the BMC and the BIOS.
	Device     string
	Updateable bool
}

// UpdateStats count the BMC's firmware updates and volume changes.
type UpdateStats struct {
	SimpleUpdates  uint64 // updates accepted (a task started): SimpleUpdate actions and pushed images
	RefusedBusy    uint64 // refused because an update was running
	Completed      uint64
	Failed         uint64 // ended in Exception (image refused, download failed)
	Lost           uint64 // lost to a BMC reset mid-update (RebootMidUpdate)
	BMCResets      uint64 // resets of the BMC itself
	MaxRunning     int    // the most updates that ran at once (never more than 1)
	VolumesCreated uint64
	VolumesDeleted uint64
	// ResetsDuringUpdate: system resets (a power change through
	// ComputerSystem.Reset, or a boot the service did not see) while an
	// update ran, which can brick a real server mid-flash: a correct
	// client makes none.
	ResetsDuringUpdate uint64
}

// lab is the service's firmware, update and storage state (under the
// service's mu).
type lab struct {
	o       Options
	ctx     context.Context
	stop    func()
	fw      []*fwItem
	run     *updateRun // the update running; nil when none
	bmcUp   time.Time  // the BMC answers nothing before it (its own reset)
	faults  faults
	drives  []Drive
	volumes []*volume
	volSeq  int
	stats   UpdateStats
	spans   []UpdateSpan // the updates' times, the last maxSpans
	// biosApplyAt: the settings staged carried an apply time (OnReset);
	// an iDRAC (Vendor dell) applies staged settings at a reset only then.
	biosApplyAt bool
	hpe         hpeState     // vendor.go: iLO's UpdateService state after the last update
	client      *http.Client // the BMC's downloads of images
}

// UpdateSpan is when an update ran: accepted at Start, ended (completed,
// failed or lost) at End, zero while it runs.
type UpdateSpan struct{ Start, End time.Time }

// maxSpans bounds the update times kept.
const maxSpans = 256

// endSpan ends the span of the update run that started at start. Called
// with mu held.
func (l *lab) endSpan(start, end time.Time) {
	for i := len(l.spans) - 1; i >= 0; i-- {
		if l.spans[i].Start.Equal(start) && l.spans[i].End.IsZero() {
			l.spans[i].End = end
			return
		}
	}
}

// faults are the failures the tests ask for.
type faults struct {
	pushOnly        bool // no SimpleUpdate: images are pushed (OnlyMultipartPush)
	rebootMidUpdate bool
	readOnlyBIOS    map[string]bool
	refuseVolumes   string
	failBuild       string // the next volume's build fails with it
	dropDrives      []int  // bays whose drive's GET drops the connection (DropDriveReads)
}

// fwItem is an inventory item and the version installed that takes
// effect at the next reset (of the BMC for the BMC's, of the system for
// the others).
type fwItem struct {
	FirmwareItem
	pending string
}

// updateRun is a firmware update: its task, targets, and the image's
// component and version once downloaded.
type updateRun struct {
	t             *task
	targets       []*fwItem // nil: every updateable item of the image's kind
	image         string    // the ImageURI, without credentials
	kind, version string
}

// defaultMaxImage bounds an image the BMC downloads.
const defaultMaxImage = 64 << 20

func newLab(o Options) *lab {
	if o.UpdateDuration <= 0 {
		o.UpdateDuration = 2 * time.Second
	}
	if o.BMCResetDuration <= 0 {
		o.BMCResetDuration = time.Second
	}
	if o.MaxImageBytes <= 0 {
		o.MaxImageBytes = defaultMaxImage
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &lab{o: o, ctx: ctx, stop: cancel, drives: o.Drives, faults: faults{readOnlyBIOS: map[string]bool{}}}
	if l.drives == nil {
		l.drives = DefaultDrives()
	}
	items := o.Firmware
	if items == nil {
		items = DefaultFirmware(o)
	}
	for _, it := range items {
		l.fw = append(l.fw, &fwItem{FirmwareItem: it})
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: labRoots(o.CA)},
		ResponseHeaderTimeout: 30 * time.Second}
	l.client = &http.Client{Timeout: 2 * time.Minute, Transport: tr}
	return l
}

// labRoots trusts the system's roots and the lab CA (an image served over
// HTTPS in the lab).
func labRoots(ca *CA) *x509.CertPool {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if ca != nil {
		pool.AppendCertsFromPEM(ca.PEM())
	}
	return pool
}

// DefaultFirmware is the inventory of a GPU server like a Dell XE9680:
// its BMC and BIOS (the versions of o, else the mockup's), a NIC, a GPU
// and the drives' firmware.
func DefaultFirmware(o Options) []FirmwareItem {
	bmcV, biosV := o.BMCFirmware, o.BIOSVersion
	if bmcV == "" {
		bmcV, _ = mockDoc(redfishmock.Root + "/UpdateService/FirmwareInventory/BMC")["Version"].(string)
	}
	if biosV == "" {
		biosV, _ = mockDoc(systemPath)["BiosVersion"].(string)
	}
	out := []FirmwareItem{
		{ID: "BMC", Kind: kindBMC, Name: "Integrated Remote Access Controller", Version: bmcV, Updateable: true},
		{ID: "BIOS", Kind: kindBIOS, Name: "BIOS", Version: biosV, Updateable: true},
		{ID: "NIC.Slot.1-1", Kind: kindNIC, Name: "Mellanox ConnectX-7", Version: "28.39.1002", Device: "0000:3b:00.0", Updateable: true},
		{ID: "GPU.SXM.1", Kind: kindGPU, Name: "NVIDIA H100 SXM5 80GB", Version: "96.00.74.00.01", Device: "0000:18:00.0", Updateable: true},
	}
	drives := o.Drives
	if drives == nil {
		drives = DefaultDrives()
	}
	for _, d := range drives {
		out = append(out, FirmwareItem{ID: d.id(), Kind: kindDrive, Name: d.Model, Version: "J004", Device: strconv.Itoa(d.Bay), Updateable: true})
	}
	return out
}

// LabImage is a lab firmware image: the line "SLIPWAY-LAB-FIRMWARE
// component=KIND version=VERSION" then deterministic padding up to size
// bytes (the header alone when size is smaller), so a design can carry
// its SHA-256.
func LabImage(kind, version string, size int) []byte {
	header := labImageHeader + " component=" + kind + " version=" + version + "\n"
	b := make([]byte, max(size, len(header)))
	n := copy(b, header)
	// The padding's byte at i is byte(i*131+7), which repeats every 256
	// bytes: one period is made byte by byte, the rest copied (every lab
	// start makes its firmware images, and under the race detector each
	// byte stored on its own is checked on its own).
	period := min(256, len(b)-n)
	for i := n; i < n+period; i++ {
		b[i] = byte(i*131 + 7)
	}
	for done := period; n+done < len(b); done *= 2 {
		copy(b[n+done:], b[n:n+done])
	}
	return b
}

const labImageHeader = "SLIPWAY-LAB-FIRMWARE"

// parseImage reads a lab image's header: its component kind and version.
func parseImage(b []byte) (kind, version string, err error) {
	line, _, _ := bytes.Cut(b[:min(len(b), 512)], []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) != 3 || f[0] != labImageHeader {
		return "", "", fmt.Errorf("the image is not a firmware package this BMC takes (no %s header)", labImageHeader)
	}
	kind, ok1 := strings.CutPrefix(f[1], "component=")
	version, ok2 := strings.CutPrefix(f[2], "version=")
	if !ok1 || !ok2 || kind == "" || version == "" {
		return "", "", fmt.Errorf("the image's header %q does not name its component and version", bounded(string(line)))
	}
	return kind, version, nil
}

func bounded(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

var (
	updateServicePath = redfishmock.Root + "/UpdateService"
	inventoryPath     = updateServicePath + "/FirmwareInventory"
	simpleUpdatePath  = updateServicePath + "/Actions/UpdateService.SimpleUpdate"
	multipartPath     = updateServicePath + "/MultipartUpload"
	pcieDevicesPath   = redfishmock.Root + "/Chassis/" + redfishmock.ChassisID + "/PCIeDevices"
)

// labRoutes serves the UpdateService, the tasks and the Storage.
func (s *Service) labRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+updateServicePath, s.getUpdateService)
	mux.HandleFunc("POST "+simpleUpdatePath, s.simpleUpdate)
	mux.HandleFunc("POST "+updateServicePath+"/Actions/SimpleUpdate", s.simpleUpdate) // the mockup's target
	mux.HandleFunc("POST "+multipartPath, s.multipartPush)
	mux.HandleFunc("GET "+inventoryPath, s.getInventory)
	mux.HandleFunc("GET "+inventoryPath+"/{id}", s.getFirmware)
	mux.HandleFunc("GET "+pcieDevicesPath+"/{id}", s.getPCIeDevice)
	mux.HandleFunc("GET "+tasksPath, s.getTasks)
	mux.HandleFunc("GET "+tasksPath+"/{id}", s.getTask)
	mux.HandleFunc("GET "+tasksPath+"/{id}/Monitor", s.getMonitor)
	mux.HandleFunc("GET "+jobsPath+"/{id}", s.getJob) // vendor.go: iDRAC's jobs
	s.storageRoutes(mux)
	s.routeBIOSRegistry(mux) // biosregistry.go
}

// bmcResetting: the BMC is resetting (after its own update, or lost mid
// update), so it answers nothing. Every request passes here first, so it
// also moves the updates on.
func (s *Service) bmcResetting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.advance(now)
	return now.Before(s.lab.bmcUp)
}

// version is the version in effect of the first component of that kind,
// else def.
func (s *Service) version(kind, def string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.lab.fw {
		if f.Kind == kind {
			return f.Version
		}
	}
	return def
}

// advance moves the update and the tasks on to now. Called with mu held.
func (s *Service) advance(now time.Time) {
	l := s.lab
	if r := l.run; r != nil && !r.t.begin.IsZero() && l.faults.rebootMidUpdate &&
		!now.Before(r.t.begin.Add(l.o.UpdateDuration/2)) {
		l.faults.rebootMidUpdate = false
		s.dropTask(r.t)
		l.run = nil
		l.bmcUp = r.t.begin.Add(l.o.UpdateDuration/2 + l.o.BMCResetDuration)
		l.endSpan(r.t.start, r.t.begin.Add(l.o.UpdateDuration/2))
		l.stats.Lost++
		l.stats.BMCResets++
		l.hpe = hpeState{state: hpeIdle}
	}
	for _, t := range s.state.tasks {
		if t.state == taskRunning && !t.done.IsZero() && !now.Before(t.done) {
			t.state, t.percent, t.end = taskCompleted, 100, t.done
			if t.finish != nil {
				t.finish(t.done)
			}
		}
	}
	if !l.bmcUp.IsZero() && !now.Before(l.bmcUp) {
		for _, f := range l.fw {
			if f.Kind == kindBMC && f.pending != "" {
				f.Version, f.pending = f.pending, ""
			}
		}
		l.bmcUp = time.Time{}
		l.hpe = hpeState{state: hpeIdle}
	}
}

// noteReset counts a system reset while an update runs. Called with mu
// held.
func (s *Service) noteReset() {
	s.advance(time.Now())
	if s.lab.run != nil {
		s.lab.stats.ResetsDuringUpdate++
	}
}

// applyFirmware makes the firmware installed for the system's components
// the versions in effect (at a system reset). Called with mu held.
func (s *Service) applyFirmware() {
	for _, f := range s.lab.fw {
		if f.Kind != kindBMC && f.pending != "" {
			f.Version, f.pending = f.pending, ""
		}
	}
}

func (s *Service) getUpdateService(w http.ResponseWriter, _ *http.Request) {
	doc := mockDoc(updateServicePath)
	s.mu.Lock()
	busy := s.lab.run != nil
	s.mu.Unlock()
	state := "Enabled"
	if busy {
		state = "Updating"
	}
	doc["Status"] = map[string]any{"State": state, "Health": "OK"}
	doc["MaxImageSizeBytes"] = s.lab.o.MaxImageBytes
	if s.o.Vendor == vendorHPE {
		s.mu.Lock()
		s.hpeUpdateService(doc) // vendor.go
		s.mu.Unlock()
	}
	doc["Actions"] = map[string]any{"#UpdateService.SimpleUpdate": map[string]any{
		"target": simpleUpdatePath,
		"TransferProtocol@Redfish.AllowableValues": []string{"HTTP", "HTTPS"},
	}}
	s.mu.Lock()
	if s.lab.faults.pushOnly {
		doc["Actions"] = map[string]any{}
	}
	s.mu.Unlock()
	doc["MultipartHttpPushUri"] = multipartPath
	for _, k := range []string{"HttpPushUri", "HttpPushUriOptions", "HttpPushUriOptionsBusy", "ClientCertificates"} {
		delete(doc, k) // not served
	}
	writeJSON(w, http.StatusOK, doc)
}

func (s *Service) getInventory(w http.ResponseWriter, _ *http.Request) {
	doc := mockDoc(inventoryPath)
	s.mu.Lock()
	members := make([]any, 0, len(s.lab.fw))
	for _, f := range s.lab.fw {
		members = append(members, map[string]any{"@odata.id": inventoryPath + "/" + f.ID})
	}
	s.mu.Unlock()
	doc["Members"], doc["Members@odata.count"] = members, len(members)
	writeJSON(w, http.StatusOK, doc)
}

// getFirmware answers an inventory member: its version in effect, and
// the resource it belongs to (RelatedItem).
func (s *Service) getFirmware(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var it FirmwareItem
	found := false
	for _, f := range s.lab.fw {
		if f.ID == r.PathValue("id") {
			it, found = f.FirmwareItem, true
		}
	}
	s.mu.Unlock()
	if !found {
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "The firmware inventory has no item of that ID")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"@odata.type": "#SoftwareInventory.v1_9_0.SoftwareInventory", "@odata.id": inventoryPath + "/" + it.ID,
		"Id": it.ID, "Name": it.Name, "Version": it.Version, "Updateable": it.Updateable,
		"Status":      map[string]any{"State": "Enabled", "Health": "OK"},
		"RelatedItem": []any{map[string]any{"@odata.id": s.related(it)}}, "RelatedItem@odata.count": 1,
	})
}

// relatedItem is the resource an inventory item is the firmware of.
func relatedItem(it FirmwareItem) string {
	switch it.Kind {
	case kindBMC:
		return managerPath
	case kindNIC, kindGPU:
		return pcieDevicesPath + "/" + it.Device
	case kindDrive:
		if strings.Contains(it.Device, ":") {
			return pcieDevicesPath + "/" + it.Device // an NVMe drive on the PCIe bus, by its PCI address
		}
		return controllerPath + "/Drives/Disk.Bay." + it.Device
	}
	return systemPath
}

// getPCIeDevice answers a NIC's, GPU's or NVMe drive's PCIe device (its
// Id is its PCI address in the lab; iDRAC's bus-device, vendor.go).
func (s *Service) getPCIeDevice(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var it *fwItem
	id := r.PathValue("id")
	for _, f := range s.lab.fw {
		if s.related(f.FirmwareItem) == pcieDevicesPath+"/"+id {
			it = f
		}
	}
	var doc map[string]any
	if it != nil {
		doc = map[string]any{"@odata.type": "#PCIeDevice.v1_9_0.PCIeDevice", "@odata.id": pcieDevicesPath + "/" + id,
			"Id": id, "Name": it.Name, "FirmwareVersion": it.Version, "Status": map[string]any{"State": "Enabled", "Health": "OK"}}
	}
	s.mu.Unlock()
	if doc == nil {
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "No PCIe device has that ID")
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

// simpleUpdate: UpdateService.SimpleUpdate {ImageURI, TransferProtocol,
// Targets}. The BMC answers 202 with a task, then downloads the image and
// installs it; a second update while one runs is refused with 503 and a
// Retry-After, as OpenBMC's bmcweb answers.
func (s *Service) simpleUpdate(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ImageURI, TransferProtocol string
		Targets                    []string
	}
	if !readJSON(w, r, &body) {
		return
	}
	u, msg := imageURL(body.ImageURI, body.TransferProtocol)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueFormatError", msg)
		return
	}
	s.mu.Lock()
	pushOnly := s.lab.faults.pushOnly
	s.mu.Unlock()
	if pushOnly {
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "This BMC takes images pushed to its MultipartHttpPushUri only")
		return
	}
	run := s.startUpdate(w, body.Targets, u.Redacted(), simpleUpdatePath)
	switch {
	case run == nil:
	case s.o.Vendor == vendorHPE:
		s.answerNoTask(w, run.t) // vendor.go; before the download can end the run
		go s.download(run, u)
	default:
		go s.download(run, u)
		s.answerTask(w, run.t)
	}
}

// startUpdate starts an update's task for targets, or answers why not
// (nil): an update running (503, Retry-After, as OpenBMC's bmcweb
// answers), a target unknown or not updateable (400).
func (s *Service) startUpdate(w http.ResponseWriter, targetURIs []string, image, action string) *updateRun {
	s.mu.Lock()
	s.advance(time.Now())
	if s.lab.run != nil {
		s.lab.stats.RefusedBusy++
		id := s.lab.run.t.id
		s.mu.Unlock()
		w.Header().Set("Retry-After", "30")
		writeError(w, http.StatusServiceUnavailable, "Base.1.8.ServiceTemporarilyUnavailable",
			"A firmware update is in progress (task "+id+"): wait for it to finish before starting another")
		return nil
	}
	targets, msg := s.targets(targetURIs)
	if msg != "" {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueNotInList", msg)
		return nil
	}
	run := &updateRun{targets: targets, image: image}
	run.t = s.newTask("Firmware update", action)
	s.lab.run = run
	if len(s.lab.spans) >= maxSpans {
		s.lab.spans = s.lab.spans[1:]
	}
	s.lab.spans = append(s.lab.spans, UpdateSpan{Start: run.t.start})
	s.lab.stats.SimpleUpdates++
	s.lab.stats.MaxRunning = max(s.lab.stats.MaxRunning, 1)
	s.mu.Unlock()
	return run
}

// maxTargets bounds a SimpleUpdate's targets.
const maxTargets = 64

// imageURL checks an ImageURI: http or https (TransferProtocol names the
// scheme when the URI has none); a message when it is refused.
func imageURL(uri, proto string) (*url.URL, string) {
	if len(uri) > 2048 {
		return nil, "ImageURI is longer than 2048 characters"
	}
	if !strings.Contains(uri, "://") && proto != "" {
		uri = strings.ToLower(proto) + "://" + uri
	}
	u, err := url.Parse(uri)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, "ImageURI must be an http or https URL (TransferProtocol HTTP or HTTPS); this BMC takes no other"
	}
	if proto != "" && !strings.EqualFold(proto, u.Scheme) {
		return nil, "TransferProtocol " + bounded(proto) + " does not match the ImageURI's scheme " + u.Scheme
	}
	return u, ""
}

// targets resolves a SimpleUpdate's Targets (inventory URIs, or the URIs
// of the resources they belong to); a message when one is unknown or not
// updateable. Called with mu held.
func (s *Service) targets(uris []string) ([]*fwItem, string) {
	if len(uris) > maxTargets {
		return nil, fmt.Sprintf("more than %d Targets", maxTargets)
	}
	var out []*fwItem
	for _, uri := range uris {
		var it *fwItem
		for _, f := range s.lab.fw {
			if uri == inventoryPath+"/"+f.ID || uri == s.related(f.FirmwareItem) {
				it = f
			}
		}
		switch {
		case it == nil:
			return nil, "Target " + bounded(uri) + " is not an item of the firmware inventory"
		case !it.Updateable:
			return nil, "Target " + it.ID + " cannot be updated"
		}
		out = append(out, it)
	}
	return out, ""
}

// download fetches the run's image (a real GET, bounded), checks its
// header against the targets and starts the install, or fails the task
// naming why.
func (s *Service) download(run *updateRun, u *url.URL) {
	b, err := s.fetch(u)
	s.install(run, b, err)
}

// install checks the image's header against the targets and starts the
// install, or fails the task naming why (err: the image could not be
// had).
func (s *Service) install(run *updateRun, b []byte, err error) {
	var kind, version string
	if err == nil {
		kind, version, err = parseImage(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lab.run != run {
		return // lost to a BMC reset
	}
	if err == nil {
		err = s.checkTargets(run, kind)
	}
	if err != nil {
		s.failUpdate(run, err.Error())
		return
	}
	run.kind, run.version = kind, version
	now := time.Now()
	run.t.begin, run.t.done = now, now.Add(s.lab.o.UpdateDuration)
	run.t.finish = func(at time.Time) { s.installed(run, at) }
}

// fetch GETs the image, at most MaxImageBytes of it.
func (s *Service) fetch(u *url.URL) ([]byte, error) {
	req, err := http.NewRequestWithContext(s.lab.ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.lab.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("transfer of image %s failed: %v", u.Redacted(), strings.ReplaceAll(err.Error(), u.String(), u.Redacted()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("transfer of image %s failed: the server answered %s", u.Redacted(), resp.Status)
	}
	b, err := io.ReadAll(bufio.NewReader(io.LimitReader(resp.Body, s.lab.o.MaxImageBytes+1)))
	if err != nil {
		return nil, fmt.Errorf("transfer of image %s failed: %v", u.Redacted(), err)
	}
	if int64(len(b)) > s.lab.o.MaxImageBytes {
		return nil, fmt.Errorf("the image %s is larger than the %d bytes this BMC takes", u.Redacted(), s.lab.o.MaxImageBytes)
	}
	return b, nil
}

// checkTargets: the image's component must be the targets' kind; no
// targets are every updateable item of that kind. Called with mu held.
func (s *Service) checkTargets(run *updateRun, kind string) error {
	if run.targets == nil {
		for _, f := range s.lab.fw {
			if f.Kind == kind && f.Updateable {
				run.targets = append(run.targets, f)
			}
		}
		if run.targets == nil {
			return fmt.Errorf("the image is for component %s, and this system has none", bounded(kind))
		}
	}
	for _, f := range run.targets {
		if f.Kind != kind {
			return fmt.Errorf("the image is for component %s, and target %s is a %s", bounded(kind), f.ID, f.Kind)
		}
	}
	return nil
}

// failUpdate ends the run's task in Exception with msg. Called with mu
// held.
func (s *Service) failUpdate(run *updateRun, msg string) {
	run.t.state, run.t.end = taskException, time.Now()
	run.t.messages = append(run.t.messages, taskMessage{"Update.1.0.ApplyFailed", "Installation of image " + run.image + " failed: " + msg, "Critical"})
	s.lab.run = nil
	s.lab.endSpan(run.t.start, run.t.end)
	s.lab.stats.Failed++
	s.lab.hpe = hpeState{hpeError, "Installation of image " + run.image + " failed: " + msg}
}

// installed ends an update at: the targets' new version is installed (in
// effect after the BMC's reset, which starts now, for the BMC; after the
// next system reset for the others). Called with mu held.
func (s *Service) installed(run *updateRun, at time.Time) {
	bmc := false
	ids := make([]string, 0, len(run.targets))
	for _, f := range run.targets {
		f.pending = run.version
		bmc = bmc || f.Kind == kindBMC
		ids = append(ids, f.ID)
	}
	when := "the next system reset"
	if bmc {
		s.lab.bmcUp = at.Add(s.lab.o.BMCResetDuration)
		s.lab.stats.BMCResets++
		when = "the BMC's reset, which follows now"
	}
	run.t.messages = append(run.t.messages, taskMessage{"Update.1.0.UpdateSuccessful",
		"Version " + run.version + " was installed on " + strings.Join(ids, ", ") + "; it takes effect after " + when, "OK"})
	s.lab.run = nil
	s.lab.endSpan(run.t.start, at)
	s.lab.stats.Completed++
	s.lab.hpe = hpeState{state: hpeComplete}
}

// RebootMidUpdate makes the BMC reset halfway through the next firmware
// update (or the one running): its task is lost, the old version stays,
// and the BMC answers nothing for BMCResetDuration.
func (s *Service) RebootMidUpdate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lab.faults.rebootMidUpdate = true
}

// Firmware is the inventory: each item's version in effect.
func (s *Service) Firmware() []FirmwareItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	out := make([]FirmwareItem, len(s.lab.fw))
	for i, f := range s.lab.fw {
		out[i] = f.FirmwareItem
	}
	return out
}

// PendingFirmware is the versions installed and not yet in effect, by
// inventory ID.
func (s *Service) PendingFirmware() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	out := map[string]string{}
	for _, f := range s.lab.fw {
		if f.pending != "" {
			out[f.ID] = f.pending
		}
	}
	return out
}

// SetFirmwareVersion changes an item's version in effect behind
// everyone's back (as a technician's update would); false when the
// inventory has no such item.
func (s *Service) SetFirmwareVersion(id, version string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.lab.fw {
		if f.ID == id {
			f.Version = version
			return true
		}
	}
	return false
}

// UpdateSpans are when the BMC's updates ran (the last 256), so that a
// test can count how many ran at once across BMCs.
func (s *Service) UpdateSpans() []UpdateSpan {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	return append([]UpdateSpan(nil), s.lab.spans...)
}

// Updates returns the update and volume counters.
func (s *Service) Updates() UpdateStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	return s.lab.stats
}
