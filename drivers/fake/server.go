package fake

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// MAAS-like machine states the fake server driver uses.
const (
	StateNew           = "New"
	StateCommissioning = "Commissioning"
	StateReady         = "Ready"
	StateAllocated     = "Allocated"
	StateDeploying     = "Deploying"
	StateDeployed      = "Deployed"
	StateReleasing     = "Releasing"
	StateBroken        = "Broken"
	// StateFailedDeployment: a deploy that failed at install (a custom
	// image with no complete version, as MAAS's install fails).
	StateFailedDeployment = "Failed deployment"
	// Recovery (recover.go).
	StateEnteringRescue = "Entering rescue mode"
	StateRescue         = "Rescue mode"
	StateExitingRescue  = "Exiting rescue mode"
	StateTesting        = "Testing"
)

// Server is a fake server provisioning driver keeping machines in memory.
type Server struct {
	core
	next     int
	machines map[string]*machine          // by MachineID
	byNode   map[string]string            // node name -> MachineID
	site     *drivers.SiteSpec            // the last prepared site
	hardware map[string]drivers.Inventory // SetHardware's, by node
	img      images                       // boot images (images.go)
	rev      int                          // state changes so far (changes.go)
}

type machine struct {
	drivers.Machine
	enlisting bool // IdentifyNode is still enlisting it
	polls     int  // InProgress answers given for the long step under way
	applied   map[string]bool
	erase     drivers.Erase // the last release's erase policy
	before    string        // the state before rescue mode or testing
	testedAt  time.Time     // the last test run finished then, the machine in testedIn
	testedIn  string        // see testedAt
	unmarked  bool          // its ownership marker was removed (Tamper)
	image     string        // the image its last deploy took, and that version's SHA-256 (custom images)
	imageSHA  string
	failedMsg string // why its deploy failed (Failed deployment)
	noted     string // the state changes.go last counted
	changed   int    // the change counter when it last changed (changes.go)
}

var _ drivers.Server = (*Server)(nil)

// NewServer returns a fake server driver following s.
func NewServer(s Script) *Server {
	return &Server{core: core{script: s}, machines: map[string]*machine{}, byNode: map[string]string{}}
}

// AddMachine adds a machine as if it had been enlisted outside this
// orchestrator (State defaults to Ready; an empty MachineID gets the next
// fake ID) and returns it. A machine with a Node is found by IdentifyNode.
func (f *Server) AddMachine(m drivers.Machine) drivers.Machine {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m.MachineID == "" {
		m.MachineID = f.newID()
	}
	if m.State == "" {
		m.State = StateReady
	}
	f.machines[m.MachineID] = &machine{Machine: m, applied: map[string]bool{}}
	f.note(f.machines[m.MachineID])
	if m.Node != "" {
		f.byNode[m.Node] = m.MachineID
	}
	return f.machines[m.MachineID].view()
}

// SetState forces a machine's state, e.g. to Broken.
func (f *Server) SetState(machineID, state string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.machines[machineID]
	if m == nil {
		return fmt.Errorf("fake: unknown machine %q", machineID)
	}
	m.State, m.polls, m.enlisting = state, 0, false
	f.note(m)
	return nil
}

// Machines returns all machines, owned or not, sorted by ID.
func (f *Server) Machines() []drivers.Machine {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.list(false)
}

// Applied reports whether ApplyNetworking, ApplyStorage or ApplyPlatform
// (what) was applied to the machine.
func (f *Server) Applied(machineID, what string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.machines[machineID]
	return m != nil && m.applied[what]
}

// DeployedImage returns the image the machine's last deploy took and, for
// a custom image, the SHA-256 of the version it took.
func (f *Server) DeployedImage(machineID string) (name, sha256 string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.machines[machineID]; m != nil {
		return m.image, m.imageSHA
	}
	return "", ""
}

// Site returns the site last prepared, if any.
func (f *Server) Site() (drivers.SiteSpec, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.site == nil {
		return drivers.SiteSpec{}, false
	}
	return *f.site, true
}

func (f *Server) newID() string {
	for {
		f.next++
		id := fmt.Sprintf("fake-%04d", f.next)
		if f.machines[id] == nil {
			return id
		}
	}
}

func (f *Server) list(ownedOnly bool) []drivers.Machine {
	out := []drivers.Machine{}
	for _, m := range f.machines {
		if !ownedOnly || m.Owned {
			out = append(out, m.view())
		}
	}
	slices.SortFunc(out, func(a, b drivers.Machine) int { return cmp.Compare(a.MachineID, b.MachineID) })
	return out
}

// view is the Machine the driver reports, with the power derived from the
// state.
func (m *machine) view() drivers.Machine {
	v := m.Machine
	if v.Owned && v.OwnerNode == "" && !m.unmarked { // the marker names its node (tamper.go)
		v.OwnerNode = v.Node
	}
	switch m.State {
	case StateCommissioning, StateDeploying, StateDeployed, StateReleasing,
		StateEnteringRescue, StateRescue, StateExitingRescue, StateTesting:
		v.Power = drivers.PowerOn
	default:
		v.Power = drivers.PowerOff
	}
	return v
}

// find returns the machine of ref: by MachineID when set, else by node
// name. Called with f.mu held.
func (f *Server) find(ref drivers.NodeRef) *machine {
	if ref.MachineID != "" {
		return f.machines[ref.MachineID]
	}
	if id, ok := f.byNode[ref.Name]; ok {
		return f.machines[id]
	}
	return nil
}

// lookup is find for the steps: an unknown machine is a Permanent error,
// one still enlisting a Transient one. Called with f.mu held.
func (f *Server) lookup(ref drivers.NodeRef) (*machine, error) {
	m := f.find(ref)
	switch {
	case m == nil && ref.MachineID != "":
		return nil, drivers.Errorf(drivers.Permanent, "fake: unknown machine %q (node %q)", ref.MachineID, ref.Name)
	case m == nil:
		return nil, drivers.Errorf(drivers.Permanent, "fake: no machine for node %q; identify it first", ref.Name)
	case m.enlisting:
		return nil, drivers.Errorf(drivers.Transient, "fake: machine %s is still enlisting", m.MachineID)
	}
	return m, nil
}

// progress advances the long step under way on m: InProgress for
// Script.Polls calls, then finish and Done. Called with f.mu held.
func (f *Server) progress(m *machine, what string, finish func()) drivers.Result {
	if m.polls < f.script.Polls {
		m.polls++
		return drivers.InProgress(RetryAfter, "fake: %s %s (%d/%d)", what, m.MachineID, m.polls, f.script.Polls)
	}
	m.polls = 0
	finish()
	f.note(m)
	return drivers.Done("fake: %s %s done, machine is %s", what, m.MachineID, m.State)
}

func notReady(m *machine) error {
	return drivers.Errorf(drivers.Permanent, "fake: machine %s is %s, not %s", m.MachineID, m.State, StateReady)
}

// ProbeSite reports the fake provisioner reachable and authenticated.
func (f *Server) ProbeSite(ctx context.Context) (drivers.SiteInfo, error) {
	if _, stop, err := f.begin(ctx, "ProbeSite", "", false); stop {
		return drivers.SiteInfo{}, err
	}
	return drivers.SiteInfo{Reachable: true, Authenticated: true, Version: "fake-1.0",
		Capabilities: []string{"fake"}, BootImages: f.bootImages()}, nil
}

// PrepareSite records the site.
func (f *Server) PrepareSite(ctx context.Context, site drivers.SiteSpec) (drivers.Result, error) {
	if r, stop, err := f.begin(ctx, "PrepareSite", "", true); stop {
		return r, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	site.Subnets = slices.Clone(site.Subnets)
	f.site = &site
	return drivers.Done("fake: site with %d subnets prepared", len(site.Subnets)), nil
}

// IdentifyNode finds the node's machine (by MachineID, then by node name)
// or enlists a new one, InProgress for Script.Polls calls. The machine is
// marked owned and carries the node's name.
func (f *Server) IdentifyNode(ctx context.Context, n drivers.Node) (drivers.Machine, drivers.Result, error) {
	if r, stop, err := f.begin(ctx, "IdentifyNode", n.Name, true); stop {
		return drivers.Machine{}, r, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n.Name == "" {
		return drivers.Machine{}, drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: node has no name")
	}
	m := f.find(n.NodeRef)
	if m == nil && n.MachineID != "" {
		m = f.find(drivers.NodeRef{Name: n.Name}) // a stale ID: look by name
	}
	if m == nil {
		hostname := n.Hostname
		if hostname == "" {
			hostname = n.Name
		}
		m = &machine{Machine: drivers.Machine{MachineID: f.newID(), Hostname: hostname, State: StateNew},
			enlisting: true, applied: map[string]bool{}}
		f.machines[m.MachineID] = m
		f.note(m)
	}
	if m.Node != "" && m.Node != n.Name {
		return drivers.Machine{}, drivers.Result{}, drivers.Errorf(drivers.Permanent,
			"fake: machine %s belongs to node %q, not %q", m.MachineID, m.Node, n.Name)
	}
	m.Node, m.Owned = n.Name, true
	f.byNode[n.Name] = m.MachineID
	if m.enlisting {
		r := f.progress(m, "enlisting", func() { m.enlisting = false })
		return m.view(), r, nil
	}
	return m.view(), drivers.Done("fake: node %s is machine %s (%s)", n.Name, m.MachineID, m.State), nil
}

// Commission commissions a New or Broken machine (Commissioning, then
// Ready); a Ready machine is already commissioned.
func (f *Server) Commission(ctx context.Context, ref drivers.NodeRef) (drivers.Result, error) {
	return f.onMachine(ctx, "Commission", ref, func(m *machine) (drivers.Result, error) {
		switch m.State {
		case StateReady:
			return drivers.Done("fake: machine %s already commissioned", m.MachineID), nil
		case StateNew, StateBroken:
			m.State, m.polls = StateCommissioning, 0
			f.note(m)
		case StateCommissioning:
		default:
			return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: machine %s is %s, cannot commission", m.MachineID, m.State)
		}
		return f.progress(m, "commissioning", func() { m.State = StateReady }), nil
	})
}

// onMachine runs a lifecycle step of the node's machine: the scripted
// failures and delays first (begin), then fn on the machine with the
// server's lock held.
func (f *Server) onMachine(ctx context.Context, method string, ref drivers.NodeRef, fn func(m *machine) (drivers.Result, error)) (drivers.Result, error) {
	if r, stop, err := f.begin(ctx, method, ref.Name, true); stop {
		return r, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.lookup(ref)
	if err != nil {
		return drivers.Result{}, err
	}
	return fn(m)
}

func (f *Server) apply(ctx context.Context, method, what string, n drivers.Node) (drivers.Result, error) {
	return f.onMachine(ctx, method, n.NodeRef, func(m *machine) (drivers.Result, error) {
		if m.State != StateReady && m.State != StateAllocated {
			return drivers.Result{}, notReady(m)
		}
		m.applied[what] = true
		return drivers.Done("fake: %s applied to machine %s", what, m.MachineID), nil
	})
}

// ApplyNetworking records the networking as applied (Ready or Allocated only).
func (f *Server) ApplyNetworking(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return f.apply(ctx, "ApplyNetworking", "networking", n)
}

// ApplyStorage records the storage as applied (Ready or Allocated only).
func (f *Server) ApplyStorage(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	return f.apply(ctx, "ApplyStorage", "storage", n)
}

// ApplyPlatform records the platform as applied (Ready or Allocated only).
// The machine then reports the node's tags and kernel parameters (tamper.go).
func (f *Server) ApplyPlatform(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	r, err := f.apply(ctx, "ApplyPlatform", "platform", n)
	if err == nil && r.Status == drivers.StatusDone {
		f.platformApplied(n)
	}
	return r, err
}

// Deploy deploys a Ready or Allocated machine (Deploying, then Deployed).
func (f *Server) Deploy(ctx context.Context, n drivers.Node, _ drivers.Deployment) (drivers.Result, error) {
	return f.onMachine(ctx, "Deploy", n.NodeRef, func(m *machine) (drivers.Result, error) {
		switch m.State {
		case StateDeployed:
			return drivers.Done("fake: machine %s already deployed", m.MachineID), nil
		case StateReady, StateAllocated:
			m.State, m.polls, m.image, m.imageSHA = StateDeploying, 0, n.Platform.Image, ""
			f.note(m)
		case StateDeploying:
		case StateFailedDeployment:
			return drivers.Failed("fake: deployment of machine %s failed: %s", m.MachineID, m.failedMsg), nil
		default:
			return drivers.Result{}, notReady(m)
		}
		return f.install(m), nil
	})
}

// install advances a deploy; at its end the image is installed: the
// newest complete version then (MAAS takes any image name at deploy and
// fails at install when it has no complete version: Failed deployment).
// Called with f.mu held.
func (f *Server) install(m *machine) drivers.Result {
	var failed error
	r := f.progress(m, "deploying", func() {
		sha, err := f.deployable(m.image)
		if failed = err; err != nil {
			m.State, m.failedMsg = StateFailedDeployment, err.Error()
			f.note(m)
			return
		}
		m.State, m.imageSHA, m.failedMsg = StateDeployed, sha, ""
		f.note(m)
	})
	if failed != nil {
		return drivers.Failed("fake: deployment of machine %s failed at install: %v", m.MachineID, failed)
	}
	return r
}

// Release releases a Deployed or Allocated machine (Releasing, then
// Ready); a Ready machine is already released.
func (f *Server) Release(ctx context.Context, ref drivers.NodeRef, erase drivers.Erase) (drivers.Result, error) {
	return f.onMachine(ctx, "Release", ref, func(m *machine) (drivers.Result, error) {
		switch m.State {
		case StateReady:
			return drivers.Done("fake: machine %s already released", m.MachineID), nil
		case StateDeployed, StateAllocated, StateFailedDeployment:
			m.State, m.polls, m.erase = StateReleasing, 0, erase
			f.note(m)
		case StateReleasing:
		default:
			return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: machine %s is %s, cannot release", m.MachineID, m.State)
		}
		what := "releasing and erasing (" + orDefault(string(m.erase)) + ")"
		if m.erase == drivers.EraseNone {
			what = "releasing"
		}
		return f.progress(m, what, func() { m.State = StateReady; clear(m.applied) }), nil
	})
}

// Status returns one Machine per ref, in order; an unknown one is empty.
func (f *Server) Status(ctx context.Context, refs []drivers.NodeRef) ([]drivers.Machine, error) {
	if _, stop, err := f.begin(ctx, "Status", "", false); stop {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]drivers.Machine, len(refs))
	for i, ref := range refs {
		if m := f.find(ref); m != nil {
			out[i] = m.view()
		}
	}
	return out, nil
}

// Owned lists the owned machines sorted by MachineID.
func (f *Server) Owned(ctx context.Context) ([]drivers.Machine, error) {
	if _, stop, err := f.begin(ctx, "Owned", "", false); stop {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.list(true), nil
}

// Recover runs a recovery action: abort moves a Commissioning machine back
// to Ready, a Deploying one to Allocated and a Testing one to where it
// was; mark-fixed moves a Broken machine to Ready; abort or mark-fixed
// of another state is a Permanent error. The other actions are in
// recover.go.
func (f *Server) Recover(ctx context.Context, ref drivers.NodeRef, action drivers.Recovery) (drivers.Result, error) {
	if r, stop, err := f.begin(ctx, "Recover", ref.Name, true); stop {
		return r, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if action == drivers.RecoveryDelete && ref.MachineID != "" && f.find(ref) == nil {
		return drivers.Done("fake: machine %s is gone (already deleted)", ref.MachineID), nil
	}
	m, err := f.lookup(ref)
	if err != nil {
		return drivers.Result{}, err
	}
	if action != drivers.RecoveryAbort && action != drivers.RecoveryMarkFixed {
		if !slices.Contains(drivers.Recoveries, action) {
			return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: unknown recovery action %q", action)
		}
		return f.recoverMore(ref, m, action)
	}
	from := m.State
	to, ok := abortOrFix(m, action)
	if !ok {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: cannot %s machine %s: it is %s", action, m.MachineID, m.State)
	}
	m.State, m.polls = to, 0
	f.note(m)
	return drivers.Done("fake: %s: machine %s moved from %s to %s", action, m.MachineID, from, m.State), nil
}

// abortOrFix is the state abort or mark-fixed moves m to; ok is false
// where the action does not apply.
func abortOrFix(m *machine, action drivers.Recovery) (string, bool) {
	switch {
	case action == drivers.RecoveryAbort && m.State == StateCommissioning:
		return StateReady, true
	case action == drivers.RecoveryAbort && m.State == StateDeploying:
		return StateAllocated, true
	case action == drivers.RecoveryMarkFixed && m.State == StateBroken:
		return StateReady, true
	case action == drivers.RecoveryAbort && m.State == StateTesting:
		return m.before, true
	}
	return "", false
}

// Inventory gives each device alias of the node's interfaces a NIC with
// a MAC derived from the machine and the alias (stable across calls) and
// a kernel name eth0, eth1, ... in the order of the interfaces; its
// hardware facts are a plausible server's (see fakeHardware), or those
// SetHardware gave the node, and a disk for each of the node's storage
// devices.
func (f *Server) Inventory(ctx context.Context, n drivers.Node) (drivers.Inventory, error) {
	if _, stop, err := f.begin(ctx, "Inventory", n.Name, false); stop {
		return drivers.Inventory{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.lookup(n.NodeRef)
	if err != nil {
		return drivers.Inventory{}, err
	}
	inv := fakeHardware(m.MachineID)
	if hw, ok := f.hardware[n.Name]; ok {
		inv = hw
		inv.GPUs = slices.Clone(hw.GPUs)
		inv.Disks = slices.Clone(hw.Disks)
	}
	inv.MachineID = m.MachineID
	nics := []drivers.NIC{}
	for _, in := range n.Interfaces {
		for _, dev := range in.Devices {
			h := fnv.New32a()
			h.Write([]byte(m.MachineID + "/" + dev.Alias))
			s := h.Sum32()
			mac := fmt.Sprintf("02:fa:%02x:%02x:%02x:%02x", byte(s>>24), byte(s>>16), byte(s>>8), byte(s))
			nic := drivers.NIC{Alias: dev.Alias, Name: fmt.Sprintf("eth%d", len(nics)), MAC: mac,
				Driver: "fakenic", Vendor: "Slipway", Product: "Fake 25GbE", Firmware: "1.0.0", SpeedMbps: 25000, LinkUp: true}
			if dev.Bus == "pci" {
				nic.PCIAddress = dev.Address
			}
			if len(inv.NICs) > len(nics) { // SetHardware's details, in order
				d := inv.NICs[len(nics)]
				nic.Driver, nic.Vendor, nic.Product, nic.Firmware, nic.SpeedMbps, nic.LinkUp, nic.Neighbor = d.Driver, d.Vendor, d.Product, d.Firmware, d.SpeedMbps, d.LinkUp, d.Neighbor
			}
			nics = append(nics, nic)
		}
	}
	inv.NICs = nics
	if len(inv.Disks) == 0 {
		for i, sd := range n.Storage.Devices {
			inv.Disks = append(inv.Disks, drivers.Disk{Alias: sd.Device.Alias, Name: fmt.Sprintf("sd%c", 'a'+i%26), Model: "FAKE SSD 1.92TB",
				Serial: fmt.Sprintf("FAKE%s%02d", m.MachineID, i), SizeBytes: 1_920_383_410_176, BusAddress: sd.Device.Address})
		}
		if len(inv.Disks) == 0 {
			inv.Disks = []drivers.Disk{{Name: "sda", Model: "FAKE SSD 1.92TB", Serial: "FAKE" + m.MachineID + "00", SizeBytes: 1_920_383_410_176}}
		}
	}
	return inv, nil
}

// SetHardware makes Inventory of the node answer hw's facts (its system,
// firmware, CPU, memory, GPUs and disks; its NICs' details in the order
// of the node's device aliases): a test's machine that differs from its
// design.
func (f *Server) SetHardware(node string, hw drivers.Inventory) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hardware == nil {
		f.hardware = map[string]drivers.Inventory{}
	}
	f.hardware[node] = hw
}

// fakeHardware is a plausible two-socket server.
func fakeHardware(id string) drivers.Inventory {
	return drivers.Inventory{
		System:    drivers.System{Vendor: "Slipway", Product: "Fake Server", Serial: "FAKE-" + id},
		Firmware:  drivers.Firmware{BIOSVendor: "Slipway", BIOSVersion: "1.0.0", BIOSDate: "01/01/2026", BMCVersion: "1.00"},
		CPU:       drivers.CPU{Model: "Fake CPU @ 2.40GHz", Sockets: 2, Cores: 64, Threads: 128},
		MemoryMiB: 512 * 1024,
	}
}

func orDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}
