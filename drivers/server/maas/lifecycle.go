package maas

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// MAAS machine statuses (src/maascommon/enums/node.py). The driver maps
// state on these integers, never on status_name.
const (
	stNew                      = 0
	stCommissioning            = 1
	stFailedCommissioning      = 2
	stMissing                  = 3
	stReady                    = 4
	stReserved                 = 5
	stDeployed                 = 6
	stRetired                  = 7
	stBroken                   = 8
	stDeploying                = 9
	stAllocated                = 10
	stFailedDeployment         = 11
	stReleasing                = 12
	stFailedReleasing          = 13
	stDiskErasing              = 14
	stFailedDiskErasing        = 15
	stRescueMode               = 16
	stEnteringRescueMode       = 17
	stFailedEnteringRescueMode = 18
	stExitingRescueMode        = 19
	stFailedExitingRescueMode  = 20
	stTesting                  = 21
	stFailedTesting            = 22
)

// statusText says what a status means for the orchestrator. MAAS's own
// 30-minute node timeout shows up as a failed state whose status_message
// says so; it is passed on verbatim.
var statusText = map[int]string{
	stNew:                      "enlisted, not yet commissioned",
	stCommissioning:            "commissioning: MAAS runs the commissioning scripts",
	stFailedCommissioning:      "commissioning failed",
	stMissing:                  "missing: MAAS lost contact with the machine",
	stReady:                    "ready: commissioned and unallocated",
	stReserved:                 "reserved",
	stDeployed:                 "deployed",
	stRetired:                  "retired",
	stBroken:                   "broken: an operator marked it, or MAAS gave up; mark it fixed after repair",
	stDeploying:                "deploying: curtin installs the OS",
	stAllocated:                "allocated, not yet deployed",
	stFailedDeployment:         "deployment failed",
	stReleasing:                "releasing",
	stFailedReleasing:          "releasing failed",
	stDiskErasing:              "erasing disks",
	stFailedDiskErasing:        "disk erasing failed",
	stRescueMode:               "in rescue mode",
	stEnteringRescueMode:       "entering rescue mode",
	stFailedEnteringRescueMode: "failed to enter rescue mode",
	stExitingRescueMode:        "exiting rescue mode",
	stFailedExitingRescueMode:  "failed to exit rescue mode",
	stTesting:                  "testing: MAAS runs the hardware tests",
	stFailedTesting:            "hardware testing failed",
}

// Polling intervals MAAS's phases deserve (a commissioning takes minutes,
// a deployment several).
const (
	pollCommission = 10 * time.Second
	pollDeploy     = 15 * time.Second
	pollRelease    = 10 * time.Second
	pollEnlist     = 15 * time.Second
)

// OwnerDataInstance is the owner data key naming the orchestrator
// instance (instanceID) that allocated the machine, next to OwnerDataNode:
// the mark is "ours" only when both match.
const OwnerDataInstance = "slipway_instance"

// SettingCommissionRetries is how many times Commission restarts a failed
// commissioning before it reports Failed (default 2).
const SettingCommissionRetries = "commissionRetries"

const defaultCommissionRetries = 2

// describe is a machine's state for messages: its status name, what it
// means, and MAAS's status message when there is one.
func describe(m *mMachine) string {
	s := fmt.Sprintf("machine %s is %s", m.SystemID, m.StatusName)
	if t := statusText[m.Status]; t != "" && !strings.EqualFold(t, m.StatusName) {
		s += " (" + t + ")"
	}
	if msg := statusMessage(m); msg != "" && !strings.EqualFold(msg, m.StatusName) {
		s += ": " + msg
	}
	return s
}

func statusMessage(m *mMachine) string {
	if m.StatusMsg == nil {
		return ""
	}
	return strings.TrimSpace(*m.StatusMsg)
}

// fetchMachine reads one machine. An unknown ID is a Permanent error: the
// engine's MachineID is stale (IdentifyNode finds the machine again).
func (d *Driver) fetchMachine(ctx context.Context, id string) (*mMachine, error) {
	since := d.c.cache.begin()
	var m mMachine
	if err := d.getMachine(ctx, id, &m); err != nil {
		return nil, err
	}
	d.c.cache.putMachines(since, []mMachine{m})
	return &m, nil
}

// fetchState is fetchMachine that decodes the machine's state alone
// (mMachineState, with its tags), not its interfaces and disks (most of
// a machine's ~10 KB): for the looks that need no more.
func (d *Driver) fetchState(ctx context.Context, id string) (*mMachine, error) {
	since := d.c.cache.begin()
	var st mMachineState
	if err := d.getMachine(ctx, id, &st); err != nil {
		return nil, err
	}
	m := st.machine()
	d.c.cache.putRead(since, []mMachine{m}, partInterfaces|partStorage)
	return &m, nil
}

// getMachine is GET machines/{id}/ decoded into out.
func (d *Driver) getMachine(ctx context.Context, id string, out any) error {
	if id == "" {
		return drivers.Errorf(drivers.Permanent, "maas: the node has no machine ID yet (IdentifyNode first)")
	}
	if err := d.c.call(ctx, http.MethodGet, "machines/"+url.PathEscape(id)+"/", "", nil, out); err != nil {
		if isNotFound(err) {
			return drivers.Errorf(drivers.Permanent, "maas: machine %s does not exist (deleted from MAAS?); identify the node again", id)
		}
		return err
	}
	return nil
}

// machine is fetchMachine answered from the read cache when it holds a
// recent read of the machine (cache.go): the read a stage starts with.
// Where MAAS answered that the state moved, fetchMachine reads again.
// need names the parts of the machine the caller reads besides its
// state, owner and tags; a caller that needs neither its interfaces nor
// its storage gets the state alone (fetchState).
func (d *Driver) machine(ctx context.Context, id string, need part) (*mMachine, error) {
	if m, ok := d.c.cache.machine(id, need); ok {
		return m, nil
	}
	if need&(partInterfaces|partStorage) == 0 {
		return d.fetchState(ctx, id)
	}
	return d.fetchMachine(ctx, id)
}

// machineOp runs POST machines/{id}/?op=... and decodes the state of
// the machine it answers (mMachineState: its callers read no more, and
// the whole machine, interfaces and storage, is most of the answer).
func (d *Driver) machineOp(ctx context.Context, id, op string, params url.Values) (*mMachine, error) {
	var st mMachineState
	if err := d.c.call(ctx, http.MethodPost, "machines/"+url.PathEscape(id)+"/", op, params, &st); err != nil {
		return nil, err
	}
	m := st.machine()
	return &m, nil
}

// Commission brings a machine to Ready. Look first: Ready or later is
// Done; a running commissioning (or testing) is InProgress; New, Broken
// and Failed commissioning start one (skip_bmc_config unless the
// skipBMCConfig setting is false: the orchestrator owns the BMC), with the
// scripts n.Scripts chooses. Failed commissioning is retried until the machine's
// failed attempts since its last success exceed the commissionRetries
// setting (counted from MAAS's events, so a restarted orchestrator counts
// the same), then Failed with MAAS's status message. Failures before
// n.BudgetFrom do not count: an operator's retry opens a fresh budget.
func (d *Driver) Commission(ctx context.Context, n drivers.NodeRef) (drivers.Result, error) {
	m, err := d.machine(ctx, n.MachineID, 0)
	if err != nil {
		return drivers.Result{}, err
	}
	switch m.Status {
	case stReady, stAllocated, stDeployed, stDeploying, stReserved, stFailedDeployment:
		return drivers.Done("%s", describe(m)), nil
	case stCommissioning, stTesting:
		return drivers.InProgress(pollCommission, "%s", describe(m)), nil
	case stFailedCommissioning, stFailedTesting:
		failures, err := d.commissionFailures(ctx, m.SystemID, n.BudgetFrom)
		if err != nil {
			return drivers.Result{}, err
		}
		if failures > d.commissionRetries {
			return drivers.Failed("commissioning of machine %s failed %d times: %s", m.SystemID, failures,
				orText(statusMessage(m), m.StatusName)), nil
		}
		return d.startCommission(ctx, m, n.Scripts, fmt.Sprintf(" (retry %d of %d after: %s)", failures, d.commissionRetries,
			orText(statusMessage(m), m.StatusName)))
	case stNew, stBroken, stMissing:
		return d.startCommission(ctx, m, n.Scripts, "")
	}
	return drivers.Failed("cannot commission: %s", describe(m)), nil
}

// commissionParams are the parameters of a commissioning: skip_bmc_config
// and the scripts sc chooses (op=commission, and a create that
// commissions: MAAS's CommissionForm takes the same).
func (d *Driver) commissionParams(p url.Values, sc *drivers.CommissionScripts) url.Values {
	if d.skipBMCConfig {
		p.Set("skip_bmc_config", "1")
	}
	if sc != nil && len(sc.Commissioning) > 0 {
		p.Set("commissioning_scripts", strings.Join(sc.Commissioning, ","))
	}
	if sc != nil && len(sc.Testing) > 0 {
		p.Set("testing_scripts", strings.Join(sc.Testing, ","))
	}
	return p
}

func (d *Driver) startCommission(ctx context.Context, m *mMachine, sc *drivers.CommissionScripts, note string) (drivers.Result, error) {
	p := d.commissionParams(url.Values{}, sc)
	nm, err := d.machineOp(ctx, m.SystemID, "commission", p)
	if err != nil {
		if isConflict(err) { // it moved on meanwhile: look again soon
			return drivers.InProgress(pollCommission, "machine %s changed state while commissioning started: %v", m.SystemID, err), nil
		}
		return drivers.Result{}, err
	}
	return drivers.InProgress(pollCommission, "commissioning machine %s started%s; now %s", m.SystemID, note, nm.StatusName), nil
}

// commissionFailures counts the machine's "Failed commissioning" (and
// "Failed testing") events since its last "Ready", newest first, leaving
// out those from before since (when set). MAAS stamps events in UTC to
// the second ("Mon, 02 Jan. 2006 15:04:05"): an event of since's own
// second counts, so a failure is never forgotten by rounding; one whose
// time does not parse counts too.
func (d *Driver) commissionFailures(ctx context.Context, id string, since time.Time) (int, error) {
	var evs struct {
		Events []struct {
			Type    string `json:"type"`
			Created string `json:"created"`
		} `json:"events"`
	}
	if err := d.c.call(ctx, http.MethodGet, "events/", "query", url.Values{"id": {id}, "limit": {"100"}}, &evs); err != nil {
		return 0, err
	}
	floor := since.UTC().Truncate(time.Second)
	n := 0
	for _, e := range evs.Events {
		if !since.IsZero() {
			if t, err := time.Parse(eventTime, e.Created); err == nil && t.Before(floor) {
				return n, nil // older events are older still (newest first)
			}
		}
		switch e.Type {
		case "Ready":
			return n, nil
		case "Failed commissioning", "Failed testing":
			n++
		}
	}
	return n, nil
}

// eventTime is the layout of an event's created time (MAAS's
// api/events.py DATETIME_FORMAT, UTC).
const eventTime = "Mon, 02 Jan. 2006 15:04:05"

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Deploy installs the node's OS. Look first: Ready is allocated to this
// orchestrator (agent_name = instanceID) and marked with owner data
// slipway_node=<node>, then deployed in the same call; Allocated (to us)
// is deployed; Deploying is InProgress; Deployed is Done; Failed
// deployment is Failed with MAAS's message (the engine decides to retry
// or release). A machine allocated to another agent is a Permanent error.
// Each step is safe to repeat.
func (d *Driver) Deploy(ctx context.Context, n drivers.Node, dep drivers.Deployment) (drivers.Result, error) {
	m, err := d.machine(ctx, n.MachineID, 0)
	if err != nil {
		return drivers.Result{}, err
	}
	switch m.Status {
	case stDeployed:
		if err := d.checkOurs(ctx, m, n.Name); err != nil {
			return drivers.Result{}, err
		}
		return drivers.Done("%s", describe(m)), nil
	case stDeploying:
		if err := d.checkOurs(ctx, m, n.Name); err != nil {
			return drivers.Result{}, err
		}
		return drivers.InProgress(pollDeploy, "%s", describe(m)), nil
	case stFailedDeployment:
		return drivers.Failed("deployment of machine %s failed: %s", m.SystemID, orText(statusMessage(m), m.StatusName)), nil
	case stReady:
		am, fresh, err := d.allocate(ctx, m, n.Name)
		if err != nil {
			return drivers.Result{}, err
		}
		if am == nil { // someone else took it meanwhile
			return drivers.Result{}, drivers.Errorf(drivers.Permanent,
				"maas: machine %s was allocated by another agent while this one allocated it", m.SystemID)
		}
		return d.deployAllocated(ctx, am, n, dep, fresh)
	case stAllocated:
		return d.deployAllocated(ctx, m, n, dep, false)
	case stCommissioning, stTesting, stReleasing, stDiskErasing:
		return drivers.InProgress(pollDeploy, "waiting before deploying: %s", describe(m)), nil
	}
	return drivers.Failed("cannot deploy: %s", describe(m)), nil
}

// deployAllocated deploys an allocated machine: checked to be ours
// (unless ours says this call just allocated it), marked with the node's
// owner data when it lacks it, then started.
func (d *Driver) deployAllocated(ctx context.Context, m *mMachine, n drivers.Node, dep drivers.Deployment, ours bool) (drivers.Result, error) {
	if !ours {
		if err := d.checkOurs(ctx, m, n.Name); err != nil {
			return drivers.Result{}, err
		}
	}
	if m.OwnerData[OwnerDataNode] != n.Name || m.OwnerData[OwnerDataInstance] != d.instance {
		if err := d.setOwnerData(ctx, m.SystemID, n); err != nil {
			return drivers.Result{}, err
		}
	}
	return d.startDeploy(ctx, m, n, dep)
}

// allocate takes a Ready machine for this orchestrator; fresh says this
// call allocated it. It answers nil when the machine is no longer
// available and not Allocated (taken and moved on meanwhile).
func (d *Driver) allocate(ctx context.Context, m *mMachine, node string) (am *mMachine, fresh bool, err error) {
	var st mMachineState // its state is all deployAllocated reads
	err = d.c.call(ctx, http.MethodPost, "machines/", "allocate", url.Values{
		"system_id": {m.SystemID}, "agent_name": {d.instance},
		"comment": {"slipway " + d.instance + ": node " + node},
	}, &st)
	if isConflict(err) {
		// Not available: look at it again; perhaps ours, allocated by a
		// call whose answer was lost (checkOurs decides).
		cur, rerr := d.fetchState(ctx, m.SystemID)
		if rerr != nil {
			return nil, false, rerr
		}
		if cur.Status == stAllocated {
			return cur, false, nil
		}
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := st.machine()
	return &out, true, nil
}

// checkOurs makes sure an allocated or deployed machine belongs to this
// orchestrator: its owner data names the node (set only after our
// allocation), or else MAAS lists it under our agent_name (the owner data
// may be missing when the orchestrator stopped between allocate and
// set_owner_data). Anything else is a Permanent error: never deploy
// another agent's machine.
func (d *Driver) checkOurs(ctx context.Context, m *mMachine, node string) error {
	if v := m.OwnerData[OwnerDataNode]; v != "" && m.OwnerData[OwnerDataInstance] == d.instance {
		if v == node {
			return nil
		}
		return drivers.Errorf(drivers.Permanent, "maas: machine %s belongs to node %q of this site, not %q", m.SystemID, v, node)
	}
	var ms []mMachine
	if err := d.c.call(ctx, http.MethodGet, "machines/", "", url.Values{"id": {m.SystemID}, "agent_name": {d.instance}}, &ms); err != nil {
		return err
	}
	if len(ms) == 0 {
		return drivers.Errorf(drivers.Permanent, "maas: machine %s is %s by another agent (not %q); refusing to touch it",
			m.SystemID, strings.ToLower(m.StatusName), d.instance)
	}
	return nil
}

// setOwnerData marks the machine with the node's name and the design's
// owner data. It is set after allocation only: MAAS clears owner data on
// release, and marks on an unowned machine would claim what we don't own.
func (d *Driver) setOwnerData(ctx context.Context, id string, n drivers.Node) error {
	// The answer (the whole machine) is not decoded: nothing of it is used.
	return d.c.call(ctx, http.MethodPost, "machines/"+url.PathEscape(id)+"/", "set_owner_data", d.ownerData(n), nil)
}

// ownerData is the owner data setOwnerData gives the node's machine.
func (d *Driver) ownerData(n drivers.Node) url.Values {
	p := url.Values{OwnerDataNode: {n.Name}, OwnerDataInstance: {d.instance}}
	for k, v := range n.OwnerData {
		if k != OwnerDataNode && k != OwnerDataInstance && k != "op" {
			p.Set(k, v)
		}
	}
	return p
}

func (d *Driver) startDeploy(ctx context.Context, m *mMachine, n drivers.Node, dep drivers.Deployment) (drivers.Result, error) {
	p := url.Values{"agent_name": {d.instance}}
	if len(dep.UserData) > 0 {
		p.Set("user_data", base64.StdEncoding.EncodeToString(dep.UserData))
	}
	if img := n.Platform.Image; img != "" {
		if os, series, ok := strings.Cut(img, "/"); ok {
			p.Set("osystem", os)
			p.Set("distro_series", series)
		} else {
			p.Set("distro_series", img)
		}
	}
	if k := n.Platform.Kernel; k != "" {
		p.Set("hwe_kernel", k)
	}
	nm, err := d.machineOp(ctx, m.SystemID, "deploy", p)
	if err != nil {
		if isConflict(err) {
			cur, rerr := d.fetchState(ctx, m.SystemID)
			if rerr != nil {
				return drivers.Result{}, rerr
			}
			if cur.Status == stDeploying || cur.Status == stDeployed {
				return drivers.InProgress(pollDeploy, "%s", describe(cur)), nil
			}
		}
		return drivers.Result{}, err
	}
	return drivers.InProgress(pollDeploy, "deploying machine %s (%s) started; now %s", m.SystemID,
		orText(n.Platform.Image, "MAAS's default image"), nm.StatusName), nil
}

// Release gives the machine back to MAAS, erasing its disks as erase
// says (see releaseErase). Ready (or never allocated: New, Failed
// commissioning) is Done; Releasing and Disk erasing are InProgress;
// releasable states are released. MAAS's 409 "cannot be released" on a
// machine that meanwhile became Ready counts as done.
func (d *Driver) Release(ctx context.Context, n drivers.NodeRef, erase drivers.Erase) (drivers.Result, error) {
	if !erase.Valid() {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "release node %s: unknown erase policy %q (want none, quick, secure or empty for the driver's default)", n.Name, erase)
	}
	m, err := d.machine(ctx, n.MachineID, partTags) // unclaim reads its tags
	if err != nil {
		return drivers.Result{}, err
	}
	switch m.Status {
	case stReady, stNew, stFailedCommissioning, stCommissioning, stTesting, stFailedTesting:
		if err := d.unclaim(ctx, m); err != nil {
			return drivers.Result{}, err
		}
		return drivers.Done("%s: nothing to release", describe(m)), nil
	case stReleasing, stDiskErasing:
		return drivers.InProgress(pollRelease, "%s", describe(m)), nil
	case stAllocated, stDeployed, stDeploying, stFailedDeployment, stBroken, stFailedReleasing, stFailedDiskErasing:
		return d.releaseHeld(ctx, m, n, erase)
	}
	return drivers.Failed("cannot release: %s", describe(m)), nil
}

// releaseHeld releases a machine that is allocated (or broken, or failed
// on the way to or from being so), once it is known to be ours.
func (d *Driver) releaseHeld(ctx context.Context, m *mMachine, n drivers.NodeRef, erase drivers.Erase) (drivers.Result, error) {
	// A Broken machine may never have been allocated (broken while
	// commissioning): check it only when it has an owner.
	if m.Status != stBroken || (m.Owner != nil && *m.Owner != "") {
		if err := d.checkOurs(ctx, m, n.Name); err != nil {
			return drivers.Result{}, err
		}
	}
	p := url.Values{"comment": {"released by slipway " + d.instance}}
	how := d.releaseErase(erase, p)
	nm, err := d.machineOp(ctx, m.SystemID, "release", p)
	if isConflict(err) {
		return d.releaseConflict(ctx, m.SystemID, err)
	}
	if err != nil {
		return drivers.Result{}, err
	}
	if err := d.unclaim(ctx, m); err != nil { // chosen by constraints: it may be chosen again
		return drivers.Result{}, err
	}
	return drivers.InProgress(pollRelease, "releasing machine %s (%s); now %s", m.SystemID, how, nm.StatusName), nil
}

// releaseConflict reads a machine whose release MAAS refused with a 409:
// one that became Ready or is on its way there meanwhile is fine.
func (d *Driver) releaseConflict(ctx context.Context, id string, conflict error) (drivers.Result, error) {
	cur, err := d.fetchState(ctx, id)
	if err != nil {
		return drivers.Result{}, err
	}
	switch cur.Status {
	case stReady:
		return drivers.Done("%s", describe(cur)), nil
	case stReleasing, stDiskErasing:
		return drivers.InProgress(pollRelease, "%s", describe(cur)), nil
	}
	return drivers.Result{}, conflict
}

// releaseErase sets MAAS's release parameters of an erase policy and
// says what they ask for. In MAAS (ReleaseForm, Node.start_releasing)
// erase, quick_erase and secure_erase each make the release run the
// wipe-disks script; quick_erase wipes 2 MiB at each end of a disk,
// secure_erase uses the disk's secure erase, and a disk without one
// falls back to quick when both are set, else to a full overwrite with
// zeros (also what erase alone does). The default ("") is the driver's
// settings: erase unless erase=false, secure when secureErase=true, quick
// when quickErase=true. An
// explicit policy overrides the settings. What no parameter can undo is
// MAAS's own enable_disk_erasing_on_release: with it on, MAAS erases on
// every release, "none" included.
func (d *Driver) releaseErase(erase drivers.Erase, p url.Values) string {
	if erase == drivers.EraseDefault {
		switch {
		case !d.erase:
			erase = drivers.EraseNone
		case d.secureErase:
			erase = drivers.EraseSecure
		case d.quickErase:
			erase = drivers.EraseQuick
		default:
			p.Set("erase", "true")
			return "full disk erase"
		}
	}
	switch erase {
	case drivers.EraseQuick:
		p.Set("erase", "true")
		p.Set("quick_erase", "true")
		return "quick disk erase"
	case drivers.EraseSecure:
		p.Set("erase", "true")
		p.Set("secure_erase", "true")
		return "secure disk erase"
	}
	return "no disk erase"
}
