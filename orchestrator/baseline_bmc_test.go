package orchestrator_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// fwBMC is the lab's OOB driver with the baseline interfaces of a
// Redfish BMC simulated per node: a firmware inventory, update tasks
// that download the image from the URL given (a real GET, checked
// against its SHA-256 and header), run updateTime and take effect at
// the next system reset (the BMC's own at once); BIOS settings pending
// until a reset; a RAID controller with two drives. It counts what a
// test checks from the BMC's side: updates started, updates running at
// once (per BMC and in all), resets while an update ran.
type fwBMC struct {
	drivers.OOB
	updateTime time.Duration
	// Faults: the BMC reboots half-way through every update (the update
	// is abandoned); an attribute the BIOS registry refuses; a reason
	// the controller refuses every volume.
	rebootMid  bool
	rejectAttr string
	raidRefuse string
	// bmcResetFor: after its own update the BMC answers nothing this long.
	bmcResetFor time.Duration

	mu          sync.Mutex
	nodes       map[string]*fwNode
	starts      map[string]int
	downloads   int
	maxRunning  int
	busyStarts  int // starts refused: the BMC ran an update
	downAnswers int // calls refused while the BMC reset itself
	resetsInUpd int
	tasks       int
}

type fwNode struct {
	inv         []drivers.FirmwareComponent
	pending     map[string]string // item → version after the next reset
	task        *fwTask
	bios        map[string]string
	biosPending map[string]string
	volumes     []drivers.Volume
	resets      int
	downUntil   time.Time // the BMC resets itself after its own update
}

type fwTask struct {
	id      string
	start   time.Time
	targets []string
	version string
	comp    string
	ended   bool
	failed  string
}

func newFWBMC(inner drivers.OOB, updateTime time.Duration) *fwBMC {
	return &fwBMC{OOB: inner, updateTime: updateTime, nodes: map[string]*fwNode{}, starts: map[string]int{}}
}

// node is a node's BMC state, made on first use (BIOS 2.18.0, BMC 7.00,
// two GPUs at the example's addresses, ProcVirtualization Disabled).
func (f *fwBMC) node(name string) *fwNode {
	n := f.nodes[name]
	if n == nil {
		n = &fwNode{inv: []drivers.FirmwareComponent{
			{ID: "BMC", Kind: drivers.ComponentBMC, Version: "7.00", Updateable: true},
			{ID: "BIOS", Kind: drivers.ComponentBIOS, Version: "2.18.0", Updateable: true},
			{ID: "GPU.1", Kind: drivers.ComponentGPU, Version: "95.00", Device: "0000:18:00.0", Updateable: true},
			{ID: "GPU.2", Kind: drivers.ComponentGPU, Version: "95.00", Device: "0000:3b:00.0", Updateable: true},
		}, pending: map[string]string{}, bios: map[string]string{"ProcVirtualization": "Disabled", "SriovGlobalEnable": "Enabled"}}
		f.nodes[name] = n
	}
	return n
}

// running is whether t runs at now; called with f.mu held.
func (f *fwBMC) running(t *fwTask, now time.Time) bool {
	return t != nil && !t.ended && t.failed == "" && now.Before(t.start.Add(f.updateTime))
}

// tick ends the tasks whose time is up (applying them) and fails those
// a mid-update reboot cut; called with f.mu held.
func (f *fwBMC) tick(now time.Time) {
	for _, n := range f.nodes {
		t := n.task
		if t == nil || t.ended || t.failed != "" {
			continue
		}
		if f.rebootMid && now.After(t.start.Add(f.updateTime/2)) {
			t.failed = "the BMC restarted during the update; the update was abandoned and " + t.comp + " keeps its version"
			continue
		}
		if now.Before(t.start.Add(f.updateTime)) {
			continue
		}
		t.ended = true
		for i := range n.inv {
			if slices.Contains(t.targets, n.inv[i].ID) {
				if t.comp == drivers.ComponentBMC {
					n.inv[i].Version = t.version // the BMC resets itself
					n.downUntil = t.start.Add(f.updateTime + f.bmcResetFor)
				} else {
					n.pending[n.inv[i].ID] = t.version
				}
			}
		}
	}
}

// down answers a call of a BMC resetting itself; called with f.mu held.
func (f *fwBMC) down(node string) error {
	f.tick(time.Now())
	if time.Now().Before(f.node(node).downUntil) {
		f.downAnswers++
		return drivers.Errorf(drivers.Transient, "fake BMC %s: no answer (it resets)", node)
	}
	return nil
}

func (f *fwBMC) FirmwareInventory(_ context.Context, b drivers.BMC) ([]drivers.FirmwareComponent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.down(b.Node); err != nil {
		return nil, err
	}
	return slices.Clone(f.node(b.Node).inv), nil
}

func (f *fwBMC) StartFirmwareUpdate(ctx context.Context, b drivers.BMC, u drivers.FirmwareUpdate) (string, error) {
	f.mu.Lock()
	now := time.Now()
	f.tick(now)
	n := f.node(b.Node)
	if f.running(n.task, now) {
		f.busyStarts++
		f.mu.Unlock()
		return "", drivers.Errorf(drivers.Transient, "fake BMC %s: task %s: %w", b.Node, n.task.id, drivers.ErrUpdateRunning)
	}
	f.mu.Unlock()
	comp, err := f.download(ctx, u)
	if err != nil {
		return "", drivers.Errorf(drivers.Permanent, "fake BMC %s: %v", b.Node, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks++
	t := &fwTask{id: fmt.Sprintf("/redfish/v1/TaskService/Tasks/%d", f.tasks), start: time.Now(), targets: u.Targets, version: u.Version, comp: comp}
	n.task = t
	f.starts[b.Node]++
	inAll := 0
	for _, m := range f.nodes {
		if f.running(m.task, t.start) {
			inAll++
		}
	}
	f.maxRunning = max(f.maxRunning, inAll)
	return t.id, nil
}

// download GETs the image as a BMC does and checks it: its SHA-256 and
// the lab image header's component.
func (f *fwBMC) download(ctx context.Context, u drivers.FirmwareUpdate) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.ImageURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("image %s: %s %v", u.ImageURL, resp.Status, err)
	}
	f.mu.Lock()
	f.downloads++
	f.mu.Unlock()
	h := sha256.Sum256(body)
	if hex.EncodeToString(h[:]) != u.SHA256 {
		return "", fmt.Errorf("image %s: sha256 %x, want %s", u.ImageURL, h, u.SHA256)
	}
	line, _ := bufio.NewReader(strings.NewReader(string(body))).ReadString('\n')
	var comp, version string
	if _, err := fmt.Sscanf(line, "SLIPWAY-LAB-FIRMWARE component=%s version=%s", &comp, &version); err != nil {
		return "", fmt.Errorf("image %s: no lab firmware header", u.ImageURL)
	}
	return comp, nil
}

func (f *fwBMC) FirmwareUpdateStatus(_ context.Context, b drivers.BMC, handle string) (drivers.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	f.tick(now)
	t := f.node(b.Node).task
	switch {
	case t == nil || t.id != handle:
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake BMC %s: no task %s", b.Node, handle)
	case t.failed != "":
		return drivers.Failed("%s", t.failed), nil
	case t.ended:
		return drivers.Done("update to %s completed", t.version), nil
	}
	pct := int(100 * now.Sub(t.start) / f.updateTime)
	return drivers.InProgress(f.updateTime/10, "%d%% complete", pct/25*25), nil
}

func (f *fwBMC) BIOSAttributes(_ context.Context, b drivers.BMC) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.down(b.Node); err != nil {
		return nil, err
	}
	return maps.Clone(f.node(b.Node).bios), nil
}

func (f *fwBMC) ApplyBIOS(_ context.Context, b drivers.BMC, want map[string]string) (drivers.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.down(b.Node); err != nil {
		return drivers.Result{}, err
	}
	if _, bad := want[f.rejectAttr]; bad && f.rejectAttr != "" {
		return drivers.Failed("attribute %s is not in the BIOS registry (400)", f.rejectAttr), nil
	}
	n := f.node(b.Node)
	staged := map[string]string{}
	for k, v := range want {
		if n.bios[k] != v {
			staged[k] = v
		}
	}
	if len(staged) == 0 {
		return drivers.Done("in effect"), nil
	}
	n.biosPending = staged
	return drivers.InProgress(0, "staged %d settings", len(staged)), nil
}

func (f *fwBMC) Storage(_ context.Context, b drivers.BMC) ([]drivers.StorageDrive, []drivers.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.down(b.Node); err != nil {
		return nil, nil, err
	}
	drives := []drivers.StorageDrive{{ID: "Disk.Bay.0", Bay: "0", CapacityBytes: 480e9}, {ID: "Disk.Bay.1", Bay: "1", CapacityBytes: 480e9}}
	return drives, slices.Clone(f.node(b.Node).volumes), nil
}

func (f *fwBMC) CreateVolume(_ context.Context, b drivers.BMC, v drivers.Volume) (drivers.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.down(b.Node); err != nil {
		return drivers.Result{}, err
	}
	if f.raidRefuse != "" {
		return drivers.Failed("%s", f.raidRefuse), nil
	}
	n := f.node(b.Node)
	v.ID = fmt.Sprintf("Volume.%d", len(n.volumes)+1)
	n.volumes = append(n.volumes, v)
	return drivers.Done("volume %s built", v.ID), nil
}

func (f *fwBMC) DeleteVolume(context.Context, drivers.BMC, string) (drivers.Result, error) {
	return drivers.Failed("not in this fake"), nil
}

// reset applies what waits for a system reset, counting a reset while
// an update runs (what would brick a real machine).
func (f *fwBMC) reset(node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	f.tick(now)
	n := f.node(node)
	if f.running(n.task, now) {
		f.resetsInUpd++
	}
	n.resets++
	for i := range n.inv {
		if v, ok := n.pending[n.inv[i].ID]; ok {
			n.inv[i].Version = v
		}
	}
	n.pending = map[string]string{}
	maps.Copy(n.bios, n.biosPending)
	n.biosPending = nil
}

func (f *fwBMC) PowerCycle(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	f.reset(b.Node)
	return f.OOB.PowerCycle(ctx, b)
}

func (f *fwBMC) PowerOn(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	if st, err := f.PowerStatus(ctx, b); err == nil && st != drivers.PowerOn {
		f.reset(b.Node)
	}
	return f.OOB.PowerOn(ctx, b)
}

// state is a copy of a node's BMC state and its update count.
func (f *fwBMC) state(node string) (fwNode, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tick(time.Now())
	n := f.node(node)
	return fwNode{inv: slices.Clone(n.inv), pending: maps.Clone(n.pending), bios: maps.Clone(n.bios),
		biosPending: maps.Clone(n.biosPending), volumes: slices.Clone(n.volumes), resets: n.resets}, f.starts[node]
}

func (f *fwBMC) version(node, id string) string {
	s, _ := f.state(node)
	for _, c := range s.inv {
		if c.ID == id {
			return c.Version
		}
	}
	return ""
}
