package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stmcginnis/gofish/common"
	gfredfish "github.com/stmcginnis/gofish/redfish"

	"github.com/slipway-dev/slipway/drivers"
)

var _ drivers.OOBFirmwareUpdate = (*Driver)(nil)

// Bounds of what the driver reads of a BMC's inventory and tasks.
const (
	maxInventory = 512
	maxTasksRead = 256
	maxDocBytes  = 1 << 20
	maxHandle    = 512
)

// serviceRoot is where a BMC's Redfish resources are.
const serviceRoot = "/redfish/v1"

// getDoc reads the resource at uri into v (bounded).
func getDoc(c common.Client, uri string, v any) error {
	resp, err := c.Get(uri)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: the BMC's answer is not the JSON of a Redfish resource: %w", drivers.PeerText(uri), err)
	}
	return nil
}

type odataLink struct {
	ID string `json:"@odata.id"`
}

// updateServiceDoc is what the driver reads of the UpdateService.
type updateServiceDoc struct {
	Status            struct{ State string }
	Oem               struct{ Hpe hpeUpdateState }
	FirmwareInventory odataLink
	MultipartPushURI  string `json:"MultipartHttpPushUri"`
	Actions           struct {
		SimpleUpdate struct {
			Target string `json:"target"`
		} `json:"#UpdateService.SimpleUpdate"`
	}
}

// inventoryItem is a firmware inventory member, with the resource it
// belongs to (which gofish's SoftwareInventory does not expose).
type inventoryItem struct {
	gfredfish.SoftwareInventory
	Related []odataLink
}

// UnmarshalJSON decodes the member (gofish's own decoding, which would
// hide RelatedItem) and its RelatedItem.
func (it *inventoryItem) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &it.SoftwareInventory); err != nil {
		return err
	}
	var r struct{ RelatedItem []odataLink }
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	it.Related = r.RelatedItem
	return nil
}

// FirmwareInventory lists the firmware the BMC reports (BMC, BIOS, NICs,
// GPUs, drives) from its UpdateService, each with its kind and the
// device it belongs to (drivers.OOBFirmwareUpdate).
func (d *Driver) FirmwareInventory(ctx context.Context, b drivers.BMC) ([]drivers.FirmwareComponent, error) {
	var out []drivers.FirmwareComponent
	err := d.with(ctx, b, func(s session) error {
		var us updateServiceDoc
		if err := getDoc(s.c, serviceRoot+"/UpdateService", &us); err != nil {
			return err
		}
		inv := us.FirmwareInventory.ID
		if inv == "" {
			inv = serviceRoot + "/UpdateService/FirmwareInventory"
		}
		var coll struct{ Members []odataLink }
		if err := getDoc(s.c, inv, &coll); err != nil {
			return err
		}
		if len(coll.Members) > maxInventory {
			return drivers.Errorf(drivers.Permanent, "the firmware inventory has %d items, more than the %d the driver reads", len(coll.Members), maxInventory)
		}
		for _, m := range coll.Members {
			var it inventoryItem
			if err := getDoc(s.c, m.ID, &it); err != nil {
				return err
			}
			out = append(out, component(s, it))
		}
		return nil
	})
	return out, err
}

// component is an inventory item as the SDK has it: its kind and device
// from the resource it belongs to, else from its Id and Name.
func component(s session, it inventoryItem) drivers.FirmwareComponent {
	fc := drivers.FirmwareComponent{ID: it.ID, Name: it.Name, Version: it.Version, Updateable: it.Updateable,
		Kind: kindOf(it.ID, it.Name)}
	for _, r := range it.Related {
		p := r.ID
		switch {
		case strings.Contains(p, "/Managers/"):
			fc.Kind = drivers.ComponentBMC
		case strings.Contains(p, "/Drives/"):
			fc.Kind, fc.Device = drivers.ComponentDrive, driveBay(s, p)
		case strings.Contains(p, "/PCIeDevices/") || strings.Contains(p, "/PCIeFunctions/") || strings.Contains(p, "/NetworkAdapters/"):
			if fc.Kind != drivers.ComponentGPU && fc.Kind != drivers.ComponentDrive {
				fc.Kind = drivers.ComponentNIC // an NVMe drive on the PCIe bus stays a drive, at its PCI address
			}
			fc.Device = pciOf(p[strings.LastIndex(p, "/")+1:])
		}
	}
	return fc
}

// pciAddress is a PCI address as device aliases write it.
var pciAddress = regexp.MustCompile(`^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$`)

// idracPCIe is iDRAC's Id of a PCIe device (59-0) or function (59-0-1):
// its bus, device and function numbers in decimal.
var idracPCIe = regexp.MustCompile(`^([0-9]{1,3})-([0-9]{1,2})(?:-([0-7]))?$`)

// pciOf is the PCI address a PCIe device's or function's Id gives: the
// Id itself when it is one (the lab, OpenBMC), iDRAC's decimal
// bus-device(-function) in segment 0 (59-0: 0000:3b:00.0), else "" (the
// BMC tells no address: a profile's devices cannot match the item).
func pciOf(id string) string {
	if pciAddress.MatchString(id) {
		return strings.ToLower(id)
	}
	m := idracPCIe.FindStringSubmatch(id)
	if m == nil {
		return ""
	}
	bus, _ := strconv.Atoi(m[1])
	dev, _ := strconv.Atoi(m[2])
	fn := 0
	if m[3] != "" {
		fn, _ = strconv.Atoi(m[3])
	}
	if bus > 255 || dev > 31 {
		return ""
	}
	return fmt.Sprintf("0000:%02x:%02x.%d", bus, dev, fn)
}

// driveBay is the bay of the drive at p (its PhysicalLocation), else its
// Id.
func driveBay(s session, p string) string {
	dr, err := gfredfish.GetDrive(s.c, p)
	if err != nil {
		return p[strings.LastIndex(p, "/")+1:]
	}
	if loc := dr.PhysicalLocation.PartLocation; loc.LocationType == common.BayLocationType || loc.ServiceLabel != "" {
		return strconv.Itoa(loc.LocationOrdinalValue)
	}
	return dr.ID
}

// kindOf is a component's kind by its inventory Id and Name (vendors'
// words: iDRAC, iLO, ConnectX, H100 ...).
func kindOf(id, name string) string {
	up := strings.ToUpper(id + " " + name)
	has := func(words ...string) bool {
		return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(up, w) })
	}
	switch {
	case has("BIOS", "UEFI", "SYSTEM ROM"):
		return drivers.ComponentBIOS
	case has("BMC", "IDRAC", "ILO", "REMOTE ACCESS"):
		return drivers.ComponentBMC
	case has("GPU", "NVIDIA", "ACCELERATOR"):
		return drivers.ComponentGPU
	case has("NIC", "NETWORK", "ETHERNET", "CONNECTX", "ADAPTER"):
		return drivers.ComponentNIC
	case has("DISK", "DRIVE", "NVME", "SSD"):
		return drivers.ComponentDrive
	}
	return drivers.ComponentOther
}

// StartFirmwareUpdate asks the BMC's UpdateService to fetch u.ImageURL
// and install it on u.Targets (SimpleUpdate), after checking that the BMC
// runs no update already (its UpdateService's state and its tasks): that
// is an error wrapping drivers.ErrUpdateRunning. The handle is the
// update's task monitor.
func (d *Driver) StartFirmwareUpdate(ctx context.Context, b drivers.BMC, u drivers.FirmwareUpdate) (string, error) {
	img, err := url.Parse(u.ImageURL)
	if err != nil || (img.Scheme != "http" && img.Scheme != "https") || img.Host == "" || len(u.ImageURL) > 2048 {
		return "", drivers.Errorf(drivers.Permanent, "redfish: node %s: the firmware image URL is not an http(s) URL of at most 2048 characters", b.Node)
	}
	if len(u.Targets) > maxTargets {
		return "", drivers.Errorf(drivers.Permanent, "redfish: node %s: %d firmware targets, more than %d", b.Node, len(u.Targets), maxTargets)
	}
	var handle, running string
	err = d.with(oneShot(ctx), b, func(s session) error {
		var us updateServiceDoc
		if err := getDoc(s.c, serviceRoot+"/UpdateService", &us); err != nil {
			return err
		}
		if running, err = runningUpdate(s, us); err != nil || running != "" {
			return err
		}
		switch target, push := us.Actions.SimpleUpdate.Target, us.MultipartPushURI; {
		case target != "":
			handle, running, err = simpleUpdate(s, target, u, img)
		case push != "":
			handle, running, err = pushUpdate(ctx, s, push, u)
		default:
			err = drivers.Errorf(drivers.Permanent, "the BMC's UpdateService offers neither SimpleUpdate nor a MultipartHttpPushUri")
		}
		return err
	})
	if err == nil && running != "" {
		err = drivers.NewError(drivers.Transient, fmt.Errorf("redfish BMC %s of node %s: %w (%s): follow it, or wait for it to end, before starting another",
			endpoint(b), b.Node, drivers.ErrUpdateRunning, drivers.PeerText(running)))
	}
	return handle, err
}

// maxTargets bounds an update's targets.
const maxTargets = 64

// runningUpdate names the update the BMC runs ("" when none): its
// UpdateService reads Updating, or a task it keeps that is not finished
// was started by an UpdateService action (or says it is an update).
func runningUpdate(s session, us updateServiceDoc) (string, error) {
	if us.Status.State == "Updating" {
		return "the UpdateService reads Updating", nil
	}
	if us.Oem.Hpe.running() {
		return "the UpdateService reads " + drivers.PeerText(us.Oem.Hpe.State), nil
	}
	var coll struct{ Members []odataLink }
	if err := getDoc(s.c, serviceRoot+"/TaskService/Tasks", &coll); err != nil {
		if status(err) == http.StatusNotFound {
			return "", nil // no task service: the UpdateService's state stands
		}
		return "", err
	}
	members := coll.Members
	if len(members) > maxTasksRead {
		members = members[len(members)-maxTasksRead:] // the newest
	}
	for _, m := range members {
		t, err := gfredfish.GetTask(s.c, m.ID)
		if err != nil {
			if status(err) == http.StatusNotFound {
				continue // gone since the list was read
			}
			return "", err
		}
		if unfinished(t.TaskState) && isUpdate(t) {
			return "task " + m.ID + " is " + string(t.TaskState), nil
		}
	}
	return "", nil
}

func unfinished(st gfredfish.TaskState) bool {
	switch st {
	case gfredfish.CompletedTaskState, gfredfish.ExceptionTaskState, gfredfish.KilledTaskState, gfredfish.CancelledTaskState:
		return false
	}
	return true
}

func isUpdate(t *gfredfish.Task) bool {
	what := strings.ToUpper(t.Payload.TargetURI + " " + t.Name + " " + t.Description)
	return strings.Contains(what, "UPDATE") || strings.Contains(what, "FIRMWARE")
}

// simpleUpdate posts the SimpleUpdate action: the task monitor of the
// update the BMC started, or what says an update runs already.
func simpleUpdate(s session, target string, u drivers.FirmwareUpdate, img *url.URL) (handle, running string, err error) {
	body := gfredfish.SimpleUpdateParameters{ImageURI: u.ImageURL, Targets: inventoryURIs(u.Targets),
		TransferProtocol: gfredfish.TransferProtocolType(strings.ToUpper(img.Scheme))}
	resp, err := s.c.Post(target, body)
	if err != nil {
		running, err := refusal(err, u)
		return "", running, err
	}
	defer resp.Body.Close()
	h, err := monitorOf(resp)
	if h == updateServiceHandle && u.Version != "" && len(u.Version) < 128 {
		h += "#" + url.PathEscape(u.Version) // hpe.go: the version the inventory shows once the update ran
	}
	return h, "", err
}

// refusal reads a BMC's answer refusing an update: an update running
// (what OpenBMC's bmcweb answers, 503, while one runs, when the check
// before found none: one started since, or the BMC does not list it; a
// BMC merely busy is waited for the same way), or an error.
func refusal(err error, u drivers.FirmwareUpdate) (running string, _ error) {
	switch code := status(err); {
	case code == http.StatusServiceUnavailable:
		return "the BMC answered 503 to the update: " + bmcMessage(err), nil
	case code >= 400 && code < 500:
		return "", drivers.Errorf(drivers.Permanent, "the BMC refused the firmware update of %s (%d): %s", strings.Join(u.Targets, ", "), code, bmcMessage(err))
	}
	return "", err
}

// monitorOf is what follows an update the BMC accepted: the Task
// resource its answer carries (it reads TaskState throughout, where a
// task monitor such as OpenBMC's Tasks/N/Monitor answers 204 once at the
// end and 404 after), else the Location, else the answer's @odata.id.
func monitorOf(resp *http.Response) (string, error) {
	var t struct {
		ID        string `json:"@odata.id"`
		Type      string `json:"@odata.type"`
		TaskState string
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, maxDocBytes)).Decode(&t)
	loc := resp.Header.Get("Location")
	isTask := t.TaskState != "" || strings.HasPrefix(t.Type, "#Task.")
	if loc == "" || (isTask && strings.HasPrefix(t.ID, serviceRoot+"/TaskService/Tasks/")) {
		loc = t.ID
	}
	if loc == "" && resp.StatusCode == http.StatusOK && !isTask {
		return updateServiceHandle, nil // iLO: 200 and no task; followed in the UpdateService
	}
	mon, err := url.Parse(loc)
	if loc == "" || err != nil || len(loc) > maxHandle || !strings.HasPrefix(mon.Path, serviceRoot+"/") {
		return "", drivers.Errorf(drivers.Permanent, "the BMC accepted the firmware update (%d) without a task to follow it by", resp.StatusCode)
	}
	return mon.Path, nil
}

// bmcMessage is what a BMC's error answer says (its extended messages,
// else its message), bounded.
func bmcMessage(err error) string {
	var e *common.Error
	if !errors.As(err, &e) {
		return hideURLParts(drivers.PeerText(err.Error()))
	}
	var msgs []string
	for _, x := range e.ExtendedInfos {
		if x.Message != "" {
			msgs = append(msgs, x.Message)
		}
	}
	if len(msgs) == 0 {
		msgs = append(msgs, e.Message)
	}
	return hideURLParts(drivers.PeerText(strings.Join(msgs, "; ")))
}

// FirmwareUpdateStatus reads the update's task monitor: InProgress with
// its percent while it runs, Done when it completed, Failed with the
// BMC's messages when it did not, or when the BMC no longer knows it. A
// BMC that does not answer (it resets itself after its own update) is
// InProgress for resetWait from the first call it did not answer, then
// Failed.
func (d *Driver) FirmwareUpdateStatus(ctx context.Context, b drivers.BMC, handle string) (drivers.Result, error) {
	if len(handle) > maxHandle || !strings.HasPrefix(handle, serviceRoot+"/") {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "redfish: node %s: %q is not a task monitor of this driver's", b.Node, drivers.PeerText(handle))
	}
	if h, version, _ := strings.Cut(handle, "#"); h == updateServiceHandle {
		return d.updateServiceStatus(ctx, b, handle, version)
	}
	var res drivers.Result
	err := d.with(oneShot(ctx), b, func(s session) error {
		t, err := readTask(s, handle)
		if err != nil {
			if status(err) == http.StatusNotFound {
				res = drivers.Failed("the BMC no longer knows the update's task %s (it reset during the update, or dropped it): what it installed is unknown; read its firmware inventory, then start the update again", handle)
				return nil
			}
			return err
		}
		res = taskResult(handle, t)
		return nil
	})
	key := endpoint(b) + handle
	if err != nil && drivers.Classify(err) == drivers.Transient && status(err) == 0 && !errors.Is(err, context.Canceled) {
		since := d.silentSince(key)
		if wait := time.Since(since); wait < d.s.resetWait {
			return drivers.InProgress(5*time.Second, "the BMC has not answered for %s (it resets after its own update): waiting up to %s", wait.Round(time.Second), d.s.resetWait), nil
		}
		d.answered(key)
		return drivers.Failed("the BMC has not answered for %s after the update %s: check it (power, network), then read its firmware inventory", d.s.resetWait, handle), nil
	}
	d.answered(key)
	return scrub(b, res), err
}

// readTask reads the update's task at handle: a Task resource, or a task
// monitor (a handle kept from before the driver followed the Task, or a
// BMC whose answer named none), read once per call: 202 and the Task
// while it runs; its 204 (or another answer that is no Task: the
// operation's own) says the task ended and not how (OpenBMC's bmcweb
// answers 204 for a failed task too), so the Task beside it (.../Tasks/N
// for .../Tasks/N/Monitor) is read then, and a Task that cannot be read
// is taken as Completed.
func readTask(s session, handle string) (*gfredfish.Task, error) {
	t := &gfredfish.Task{}
	base, isMonitor := strings.CutSuffix(strings.TrimSuffix(handle, "/"), "/Monitor")
	if !isMonitor {
		return readJob(s, handle)
	}
	resp, err := s.c.Get(handle)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes))
	if err != nil {
		return nil, err
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, t); err != nil && resp.StatusCode == http.StatusAccepted {
			return nil, fmt.Errorf("%s: the BMC's answer is not the JSON of a task: %w", drivers.PeerText(handle), err)
		}
		if t.TaskState != "" || resp.StatusCode == http.StatusAccepted {
			return t, nil
		}
	}
	if getDoc(s.c, base, t) != nil || t.TaskState == "" {
		t = &gfredfish.Task{TaskState: gfredfish.CompletedTaskState}
		t.Messages = []common.Message{{Message: "the task monitor answered " + resp.Status}}
	}
	return t, nil
}

// readJob reads a Task resource, or a Job (iDRAC's DellJob, answered
// 200 throughout): its JobState as a TaskState and its Message as the
// task's message.
func readJob(s session, handle string) (*gfredfish.Task, error) {
	var raw json.RawMessage
	if err := getDoc(s.c, handle, &raw); err != nil {
		return nil, err
	}
	t := &gfredfish.Task{}
	var j jobDoc
	if err := json.Unmarshal(raw, t); err != nil || json.Unmarshal(raw, &j) != nil {
		return nil, fmt.Errorf("%s: the BMC's answer is not the JSON of a task: %v", drivers.PeerText(handle), err)
	}
	if j.JobState != "" {
		t.TaskState = gfredfish.TaskState(j.state())
		if j.Message != "" {
			t.Messages = append(t.Messages, common.Message{Message: j.Message})
		}
	}
	return t, nil
}

// scrub takes every form of the BMC's password, and every URL's user
// information and query, out of a Result's message (a BMC's message is
// quoted in it, and a BMC may echo what it was sent: an image URL).
func scrub(b drivers.BMC, r drivers.Result) drivers.Result {
	if pw := b.Password.Reveal(); pw != "" {
		r.Message = drivers.RedactSecrets(r.Message, pw, b.Username+":"+pw)
	}
	r.Message = hideURLParts(r.Message)
	return r
}

// updatePoll is how long the engine waits between two looks at a running
// firmware update. An update runs for minutes (an image written to flash
// and verified); a look every 10 s costs at most 10 s after its end, where
// a look every 2 s cost each update five times the BMC requests (and, in
// the lab, the engine's CPU). Ironic's Redfish driver looks once a minute.
const updatePoll = 10 * time.Second

// urlInText is a URL in a message: a scheme, "://", then no space or
// quote.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]{0,15}://[^\s"'<>]+`)

// hideURLParts shows each URL in text as its scheme, host and path: its
// user information (a password, or a BMC's "user:xxxxx") and its query
// and fragment (a presigned URL's token) are left out.
func hideURLParts(text string) string {
	return urlInText.ReplaceAllStringFunc(text, func(raw string) string {
		scheme, rest, _ := strings.Cut(raw, "://")
		if at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); at >= 0 {
			rest = rest[at+1:]
		}
		if i := strings.IndexAny(rest, "?#"); i >= 0 {
			rest = rest[:i]
		}
		return scheme + "://" + rest
	})
}

// taskResult is a task's state as a Result.
func taskResult(handle string, t *gfredfish.Task) drivers.Result {
	var msgs []string
	for _, m := range t.Messages {
		if m.Message != "" {
			msgs = append(msgs, m.Message)
		}
	}
	said := drivers.PeerText(strings.Join(msgs, "; "))
	switch t.TaskState {
	case gfredfish.CompletedTaskState:
		return drivers.Done("the BMC completed the update (%s): %s", handle, said)
	case gfredfish.ExceptionTaskState, gfredfish.KilledTaskState, gfredfish.CancelledTaskState:
		if said == "" {
			said = "no message"
		}
		return drivers.Failed("the BMC's update task %s ended %s: %s", handle, t.TaskState, said)
	}
	return drivers.InProgress(updatePoll, "%d%% (task %s %s)", t.PercentComplete, handle, t.TaskState)
}

// maxSilent bounds the BMCs remembered as not answering.
const maxSilent = 4096

// silentSince is when the BMC (and update) of key first did not answer.
func (d *Driver) silentSince(key string) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.silent == nil {
		d.silent = map[string]time.Time{}
	}
	t, ok := d.silent[key]
	if !ok {
		if len(d.silent) >= maxSilent {
			for k := range d.silent {
				delete(d.silent, k)
				break
			}
		}
		t = time.Now()
		d.silent[key] = t
	}
	return t
}

func (d *Driver) answered(key string) {
	d.mu.Lock()
	delete(d.silent, key)
	d.mu.Unlock()
}
