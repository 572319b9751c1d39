package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// reconcileState serialises reconciliation runs and says when the next
// scheduled one is due.
type reconcileState struct {
	run     sync.Mutex // one run at a time
	mu      sync.Mutex
	next    time.Time
	running bool
}

// machineRepairer is a server driver that can put back, on a deployed
// machine, what the design says (the MAAS driver is one).
type machineRepairer interface {
	RepairMachine(ctx context.Context, n drivers.Node, parts []string) (drivers.Result, error)
}

// Reconcile compares the provisioner with the node records and the
// current design, keeps one drift record per node and kind (its LastSeen
// moves while the drift lasts; it is dropped, with an event, when the
// drift is gone), updates the records' Observed state, and repairs the
// drift the Site's policy says to repair. trigger says who asked
// (schedule, cli, api:...). One run at a time: a second caller waits.
func (e *Engine) Reconcile(ctx context.Context, trigger string) (record.SweepReport, error) {
	e.recon.run.Lock()
	defer e.recon.run.Unlock()
	e.recon.mu.Lock()
	e.recon.running = true
	e.recon.mu.Unlock()
	defer func() {
		e.recon.mu.Lock()
		e.recon.running = false
		e.recon.mu.Unlock()
	}()
	rep, err := e.reconcile(ctx, trigger)
	run := record.ReconcileRun{Started: rep.Time, Finished: now(), Trigger: trigger, Owned: rep.Owned, Examined: rep.Examined,
		Open: len(rep.Records), Detected: rep.Detected, Cleared: rep.Cleared, Repaired: rep.Repaired}
	if err != nil {
		run.Error = err.Error()
	}
	var b batch
	b.put(collReconcile, "last", run)
	if werr := e.rec.write(context.WithoutCancel(ctx), &b); werr != nil && err == nil {
		err = werr
	}
	return rep, err
}

// Sweep is a reconciliation run asked for by the CLI (`orchestrator
// sweep`, `orchestrator reconcile` without a server).
func (e *Engine) Sweep(ctx context.Context) (record.SweepReport, error) {
	return e.Reconcile(ctx, "cli")
}

// found is a drift seen in this run, with what repairs it.
type found struct {
	record.DriftRecord
	lost bool // a status drift that ended the node's deployment
	rec  record.NodeRecord
}

// reconcilePass is one reconciliation run: the design it compares with,
// its report, the drift it has seen (by key) and the nodes it examined.
type reconcilePass struct {
	e        *Engine
	d        *design.Design
	rep      record.SweepReport
	seen     map[string]found
	examined map[string]bool
	// ported are the deployed and released nodes examined, whose switch
	// ports switchports reads (fabric_drift.go); unreadPorts those whose
	// ports could not be read: their stored switchport drift stays.
	ported      []record.NodeRecord
	unreadPorts map[string]bool
	// unreadBMC are the nodes whose BMC did not answer the firmware and
	// BIOS read (drift_baseline.go): their stored drift of those kinds
	// stays.
	unreadBMC map[string]bool
}

func (e *Engine) reconcile(ctx context.Context, trigger string) (record.SweepReport, error) {
	p := &reconcilePass{e: e, rep: record.SweepReport{Time: now(), Trigger: trigger}, seen: map[string]found{}, examined: map[string]bool{}}
	if e.cfg.Drivers.Server == nil {
		return p.rep, nil
	}
	p.d = e.currentDesign(ctx)
	var owned []drivers.Machine
	err := e.callServer(ctx, func(ctx context.Context) (err error) {
		owned, err = e.cfg.Drivers.Server.Owned(ctx)
		return err
	})
	if err != nil {
		return p.rep, fmt.Errorf("reconcile: list owned machines: %w", err)
	}
	p.rep.Owned = len(owned)
	recs, err := e.rec.nodes(ctx)
	if err != nil {
		return p.rep, err
	}
	claimed, watched := e.claimedAndWatched(recs)
	p.leaks(owned, claimed)
	for start := 0; start < len(watched); start += statusBatch {
		if err := p.examine(ctx, watched[start:min(start+statusBatch, len(watched))]); err != nil {
			return p.rep, err
		}
	}
	p.rep.Examined = len(p.examined)
	p.switchports(ctx) // fabric_drift.go
	p.baselines(ctx)   // drift_baseline.go
	err = p.settle(ctx)
	return p.rep, err
}

// claimedAndWatched are the machines the node records claim, and the
// records the run watches: free nodes that are settled, or whose
// deployment goes on.
func (e *Engine) claimedAndWatched(recs []record.NodeRecord) (map[string]bool, []record.NodeRecord) {
	claimed := map[string]bool{}
	var watched []record.NodeRecord
	for _, r := range recs {
		if r.MachineID == "" {
			continue
		}
		claimed[r.MachineID] = true
		if e.holder(r) == "" && (settled(r) || liveDeployment(r)) {
			watched = append(watched, r)
		}
	}
	return claimed, watched
}

// add keeps a drift seen, with the Site's policy for its kind.
func (p *reconcilePass) add(f found) {
	if _, dup := p.seen[f.Key()]; dup && f.Kind == record.DriftLeak { // two leaks marked for one node
		f.Node += "@" + f.MachineID
	}
	f.Policy = policyOf(p.d, f.Kind, p.e.cfg.ReleaseLeaks)
	p.seen[f.Key()] = f
}

// leaks records the owned machines no node record claims.
func (p *reconcilePass) leaks(owned []drivers.Machine, claimed map[string]bool) {
	for _, m := range owned {
		if claimed[m.MachineID] {
			continue
		}
		p.rep.Leaks = append(p.rep.Leaks, m)
		node := orDefault(m.OwnerNode, orDefault(m.Node, "machine-"+m.MachineID))
		p.add(found{DriftRecord: record.DriftRecord{Node: node, Kind: record.DriftLeak, MachineID: m.MachineID,
			Expected: "no machine of this orchestrator without a node record",
			Observed: fmt.Sprintf("machine %s (%s) marked for node %q, claimed by no node record", m.MachineID, m.State, m.Node)}})
	}
}

// examine reads the provisioner's status of a batch of watched nodes and
// compares each with its record and design.
func (p *reconcilePass) examine(ctx context.Context, chunk []record.NodeRecord) error {
	refs := make([]drivers.NodeRef, len(chunk))
	for i, r := range chunk {
		refs[i] = drivers.NodeRef{Name: r.Name, MachineID: r.MachineID}
	}
	ms, err := p.e.status(ctx, refs)
	if err != nil {
		return fmt.Errorf("reconcile: status: %w", err)
	}
	for i, r := range chunk[:min(len(chunk), len(ms))] {
		p.examineNode(ctx, r, ms[i])
	}
	return nil
}

// examineNode compares one node's machine with its record (the state
// observed, status drift) and, once deployed, with its design (orphan
// and attribute drift).
func (p *reconcilePass) examineNode(ctx context.Context, r record.NodeRecord, m drivers.Machine) {
	p.examined[r.Name] = true
	st := m.State
	if m.MachineID == "" {
		st = "(gone)"
	}
	if (r.Observed != st || (m.Power != "" && string(m.Power) != r.ObservedPower)) && m.MachineID != "" {
		p.e.observe(ctx, r, st, string(m.Power))
	}
	if p.statusDrift(r, st) || p.d == nil {
		return
	}
	if settledStage(r) == record.StageReleased && p.d.Nodes[r.Name] != nil {
		p.ported = append(p.ported, r) // its ports are in quarantine (fabric_drift.go)
		return
	}
	if settledStage(r) != record.StageDeployed || st != "Deployed" {
		return
	}
	n := p.d.Nodes[r.Name]
	if n == nil {
		p.add(found{DriftRecord: record.DriftRecord{Node: r.Name, Kind: record.DriftOrphan, MachineID: r.MachineID, Stage: r.Stage,
			Expected: "the node in the current design, or its machine released",
			Observed: "machine " + r.MachineID + " is Deployed; the current design has no node " + r.Name}, rec: r})
		return
	}
	for _, f := range attributeDrift(p.d, n, r, m) {
		f.rec = r
		p.add(f)
	}
	p.ported = append(p.ported, r)
}

// statusDrift records a machine whose state is not what its node's
// stage expects, or that left a deployment that goes on; true when it
// did.
func (p *reconcilePass) statusDrift(r record.NodeRecord, st string) bool {
	lost := liveDeployment(r) && !slices.Contains(deployedStates, st)
	unexpected := settled(r) && !slices.Contains(expected[settledStage(r)], st)
	if !lost && !unexpected {
		return false
	}
	p.rep.Drift = append(p.rep.Drift, record.Drift{Node: r.Name, MachineID: r.MachineID, Stage: r.Stage, Observed: st})
	want := strings.Join(expected[settledStage(r)], " or ")
	if lost && !settled(r) {
		want = "Deployed"
	}
	p.add(found{DriftRecord: record.DriftRecord{Node: r.Name, Kind: record.DriftStatus, MachineID: r.MachineID, Stage: r.Stage,
		Expected: want, Observed: st}, lost: lost, rec: r})
	return true
}

// attributeDrift compares a deployed machine with its node's design.
func attributeDrift(d *design.Design, n *design.Node, r record.NodeRecord, m drivers.Machine) []found {
	dn := driverspec.Node(d, n, r.MachineID)
	base := record.DriftRecord{Node: r.Name, MachineID: r.MachineID, Stage: r.Stage}
	var out []found
	with := func(kind record.DriftKind, want, got string) {
		f := found{DriftRecord: base}
		f.Kind, f.Expected, f.Observed = kind, want, got
		out = append(out, f)
	}
	if dn.Hostname != "" && m.Hostname != "" && m.Hostname != dn.Hostname {
		with(record.DriftHostname, dn.Hostname, m.Hostname)
	}
	var missing []string
	for _, t := range dn.Tags {
		if !slices.Contains(m.Tags, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		want := slices.Sorted(slices.Values(dn.Tags))
		with(record.DriftTags, strings.Join(want, ","), strings.Join(m.Tags, ",")+" (missing: "+strings.Join(missing, ",")+")")
	}
	if m.Power == drivers.PowerOff {
		with(record.DriftPower, string(drivers.PowerOn), string(m.Power))
	}
	if !m.Owned || m.OwnerNode != r.Name {
		got := "no ownership marker of this orchestrator"
		if m.Owned {
			got = fmt.Sprintf("the marker names node %q", m.OwnerNode)
		}
		with(record.DriftOwner, "marker of this orchestrator for node "+r.Name, got)
	}
	if want, got := kernelWords(dn.Platform.KernelParams), canonicalKernel(m.KernelOptions); want != got {
		with(record.DriftKernelOptions, orDefault(want, "(none)"), orDefault(got, "(none)"))
	}
	return out
}

// kernelWords renders kernel parameters as key=value words sorted by key,
// a "true" value as a bare flag (the drivers' KernelOptions form).
func kernelWords(params map[string]string) string {
	words := make([]string, 0, len(params))
	for k, v := range params {
		if v == "true" {
			words = append(words, k)
		} else {
			words = append(words, k+"="+v)
		}
	}
	return canonicalKernel(strings.Join(words, " "))
}

// canonicalKernel sorts kernel command line words by key.
func canonicalKernel(s string) string {
	words := strings.Fields(s)
	sort.SliceStable(words, func(i, j int) bool {
		ki, _, _ := strings.Cut(words[i], "=")
		kj, _, _ := strings.Cut(words[j], "=")
		return ki < kj
	})
	return strings.Join(words, " ")
}

// policyOf is the Site's policy for a kind; the engine's ReleaseLeaks
// setting makes leaks repaired whatever the Site says.
func policyOf(d *design.Design, kind record.DriftKind, releaseLeaks bool) string {
	if kind == record.DriftLeak && releaseLeaks {
		return design.PolicyRepair
	}
	return d.DriftPolicy(string(kind))
}

// settle writes what the run found against the stored drift records:
// new drift is recorded (with a detected event), lasting drift gets its
// LastSeen, drift that is gone is dropped (with a resolved event), and
// the drift the policy repairs is repaired.
func (p *reconcilePass) settle(ctx context.Context) error {
	stored, err := p.e.rec.drift(ctx)
	if err != nil {
		return err
	}
	accepted, err := p.e.rec.accepted(ctx)
	if err != nil {
		return err
	}
	var b batch
	repairs := p.recordSeen(ctx, &b, stored, accepted)
	p.clearGone(&b, stored)
	for k := range accepted {
		if _, still := p.seen[k]; !still {
			b.del(collAccepted, k) // the accepted state is gone: a new one is reported
		}
	}
	if err := p.e.rec.write(ctx, &b); err != nil {
		return err
	}
	for _, f := range repairs {
		if err := p.repairDrift(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// recordSeen records the drift seen, in key order, but for a state an
// operator accepted; it returns the drift the policy repairs.
func (p *reconcilePass) recordSeen(ctx context.Context, b *batch, stored map[string]record.DriftRecord, accepted map[string]string) []found {
	var repairs []found
	for _, k := range slices.Sorted(maps.Keys(p.seen)) {
		f := p.seen[k]
		if v, ok := accepted[k]; ok {
			if v == f.Observed {
				continue // an operator accepted this very state
			}
			b.del(collAccepted, k) // it changed since: report it again
		}
		old, had := stored[k]
		dr := p.record(ctx, b, k, f, old, had)
		if dr.Policy == design.PolicyRepair {
			f.DriftRecord = dr
			repairs = append(repairs, f)
		}
		p.rep.Records = append(p.rep.Records, dr)
	}
	return repairs
}

// record writes one drift seen: new (with a detected event, a lost
// deployment ended first) or lasting since it was first seen.
func (p *reconcilePass) record(ctx context.Context, b *batch, k string, f found, old record.DriftRecord, had bool) record.DriftRecord {
	at := p.rep.Time
	dr := f.DriftRecord
	ended := ""
	if f.lost { // until it is over (endLostDeployment says why not)
		ended = p.e.endLostDeployment(ctx, f.rec)
	}
	if had {
		dr.FirstSeen, dr.Note = old.FirstSeen, old.Note
	} else {
		dr.FirstSeen = at
		p.rep.Detected = append(p.rep.Detected, k)
		b.event(record.Event{Time: at, Node: dr.Node, Stage: dr.Stage, Level: "warn", Kind: "drift", Type: record.EventDriftDetected,
			Message: driftDetectedMessage(dr, f.lost, ended)})
	}
	dr.LastSeen = at
	b.put(collDrift, k, dr)
	return dr
}

// driftDetectedMessage is the event text of a new drift: what was
// expected and observed, then what ending a lost deployment did, or how
// to resolve a status drift or a leak.
func driftDetectedMessage(dr record.DriftRecord, lost bool, ended string) string {
	msg := fmt.Sprintf("%s drift: expected %s, observed %s", dr.Kind, dr.Expected, dr.Observed)
	switch {
	case lost:
		msg += ended
	case dr.Kind == record.DriftStatus:
		msg += "; `adopt` (or resolve with accept) takes the provisioner's state, a task puts the machine back"
	case dr.Kind == record.DriftLeak:
		msg += fmt.Sprintf("; resolve with release to free it, or `adopt NODE --machine %s` to attach it to a node of the design", dr.MachineID)
	}
	return msg
}

// clearGone drops the stored drift the run no longer saw (with a
// resolved event), but keeps that of a node a task drives and the run
// did not examine: it is looked at again after the task.
func (p *reconcilePass) clearGone(b *batch, stored map[string]record.DriftRecord) {
	for k, old := range stored {
		if _, still := p.seen[k]; still {
			continue
		}
		if old.Kind == record.DriftSwitchport && p.unreadPorts[old.Node] || baselineKind(old.Kind) && p.unreadBMC[old.Node] {
			p.rep.Records = append(p.rep.Records, old) // its switch or BMC did not answer this run
			continue
		}
		if old.Kind != record.DriftLeak && !p.examined[old.Node] && p.e.holder(record.NodeRecord{Name: old.Node}) != "" {
			p.rep.Records = append(p.rep.Records, old)
			continue
		}
		b.del(collDrift, k)
		p.rep.Cleared = append(p.rep.Cleared, k)
		b.event(record.Event{Time: p.rep.Time, Node: old.Node, Stage: old.Stage, Level: "info", Kind: "drift", Type: record.EventDriftResolved,
			Message: fmt.Sprintf("%s drift is gone: %s no longer observed (first seen %s)", old.Kind, old.Observed, old.FirstSeen.Format(time.RFC3339))})
	}
}

// repairDrift repairs one drift as the Site's policy says and drops its
// record; a repair that fails leaves the record with a note and a
// warning event (the error returned is a failed write).
func (p *reconcilePass) repairDrift(ctx context.Context, f found) error {
	msg, err := p.e.repair(ctx, p.d, f.DriftRecord)
	if err != nil {
		f.Note = "automatic repair failed: " + err.Error()
		var nb batch
		nb.put(collDrift, f.Key(), f.DriftRecord)
		nb.event(record.Event{Time: now(), Node: f.Node, Stage: f.Stage, Level: "warn", Kind: "drift",
			Message: fmt.Sprintf("%s drift: automatic repair failed: %v; resolve it (`orchestrator drift resolve %s --kind %s --resolution ...`)", f.Kind, err, f.Node, f.Kind)})
		return p.e.rec.write(ctx, &nb)
	}
	if err := p.e.dropDrift(ctx, f.DriftRecord, "repaired (site policy): "+msg, ""); err != nil {
		return err
	}
	p.rep.Repaired = append(p.rep.Repaired, f.Key())
	p.rep.Records = slices.DeleteFunc(p.rep.Records, func(r record.DriftRecord) bool { return r.Key() == f.Key() })
	if f.Kind == record.DriftLeak {
		p.rep.Released = append(p.rep.Released, f.MachineID)
	}
	return nil
}

// dropDrift deletes a drift record with a resolved event.
func (e *Engine) dropDrift(ctx context.Context, dr record.DriftRecord, why, correlation string) error {
	var b batch
	b.del(collDrift, dr.Key())
	b.event(record.Event{Time: now(), Node: dr.Node, Stage: dr.Stage, Level: "info", Kind: "drift", Type: record.EventDriftResolved,
		Correlation: correlation, Message: fmt.Sprintf("%s drift resolved: %s", dr.Kind, why)})
	return e.rec.write(ctx, &b)
}

// observe records the provisioner state last seen on a free node's
// record, unless a task took the node or its record changed meanwhile.
func (e *Engine) observe(ctx context.Context, r record.NodeRecord, state, power string) {
	const by = "(reconcile)"
	if !e.leaseFor(r.Name, by) {
		return
	}
	defer e.unleaseFor(r.Name, by)
	cur, ok, err := e.rec.node(ctx, r.Name)
	if err != nil || !ok || !cur.Updated.Equal(r.Updated) {
		return
	}
	cur.Observed, cur.ObservedPower = state, orDefault(power, cur.ObservedPower)
	var b batch
	b.node(cur)
	if err := e.rec.write(ctx, &b); err != nil {
		e.log.Warn().Err(err).Str("node", r.Name).Msg("reconcile: recording the observed state failed")
	}
}

// repair puts back what the design says about a drift: it releases a
// leaked machine, or has the server driver repair a deployed machine.
func (e *Engine) repair(ctx context.Context, d *design.Design, dr record.DriftRecord) (string, error) {
	switch dr.Kind {
	case record.DriftLeak:
		return e.releaseLeak(ctx, dr)
	case record.DriftStatus:
		return "", fmt.Errorf("%w: node %s: status drift is put back by a task (deploy, or destroy the node), or accepted (adopt)", ErrConflict, dr.Node)
	case record.DriftOrphan:
		return "", fmt.Errorf("%w: node %s is not in the current design: put it back in the design, or release its machine (resolution release, or `orchestrator destroy --node %s`)", ErrConflict, dr.Node, dr.Node)
	case record.DriftSwitchport:
		return e.repairPorts(ctx, d, dr) // fabric_drift.go
	case record.DriftFirmware, record.DriftBIOS:
		return e.repairBaseline(ctx, d, dr) // drift_baseline.go
	}
	return e.repairMachine(ctx, d, dr)
}

// releaseLeak releases a leaked machine.
func (e *Engine) releaseLeak(ctx context.Context, dr record.DriftRecord) (string, error) {
	var res drivers.Result
	err := e.callServer(ctx, func(ctx context.Context) (err error) {
		res, err = e.cfg.Drivers.Server.Release(ctx, drivers.NodeRef{Name: dr.Node, MachineID: dr.MachineID}, drivers.EraseNone)
		return err
	})
	if err == nil && res.Status == drivers.StatusFailed {
		err = fmt.Errorf("%s", res.Message)
	}
	if err != nil {
		return "", fmt.Errorf("releasing leaked machine %s: %w", dr.MachineID, err)
	}
	return "machine " + dr.MachineID + " released", nil
}

// repairMachine has the server driver put back, on a node's deployed
// machine, the part of the design a drift is about (with the node's
// lease held).
func (e *Engine) repairMachine(ctx context.Context, d *design.Design, dr record.DriftRecord) (string, error) {
	if d == nil || d.Nodes[dr.Node] == nil {
		return "", fmt.Errorf("%w: node %s is not in the current design: nothing to repair its machine to", ErrConflict, dr.Node)
	}
	fix, ok := e.cfg.Drivers.Server.(machineRepairer)
	if !ok {
		return "", fmt.Errorf("%w: the server driver cannot repair a deployed machine; redeploy node %s (`orchestrator redeploy --node %s`)", ErrConflict, dr.Node, dr.Node)
	}
	const by = "(reconcile)"
	if !e.leaseFor(dr.Node, by) {
		return "", fmt.Errorf("%w: node %s is held by a running task; repair it after the task", ErrConflict, dr.Node)
	}
	defer e.unleaseFor(dr.Node, by)
	rec, _, err := e.rec.node(ctx, dr.Node)
	if err != nil {
		return "", err
	}
	if rec.MachineID == "" {
		return "", fmt.Errorf("%w: node %s has no machine", ErrConflict, dr.Node)
	}
	dn, err := e.serverNode(ctx, d, d.Nodes[dr.Node], rec.MachineID)
	if err != nil {
		return "", err
	}
	var res drivers.Result
	err = e.callServer(ctx, func(ctx context.Context) (err error) {
		res, err = fix.RepairMachine(ctx, dn, []string{string(dr.Kind)})
		return err
	})
	if err == nil && res.Status == drivers.StatusFailed {
		err = fmt.Errorf("%s", res.Message)
	}
	if err != nil {
		return "", fmt.Errorf("node %s: repairing %s: %w", dr.Node, dr.Kind, err)
	}
	return res.Message, nil
}

// ResolveDrift applies an operator's resolution to a node's open drift of
// one kind. correlation is the API request's ID ("" from the CLI); the
// resolved event carries it.
func (e *Engine) ResolveDrift(ctx context.Context, node string, kind record.DriftKind, res record.Resolution, who, correlation string) (record.DriftResolved, error) {
	if err := checkResolveDrift(node, kind, res, correlation); err != nil {
		return record.DriftResolved{}, err
	}
	e.recon.run.Lock() // not while a run settles its records
	defer e.recon.run.Unlock()
	var dr record.DriftRecord
	if err := e.rec.getJSON(ctx, collDrift, record.DriftKey(node, kind), &dr); err != nil {
		return record.DriftResolved{}, fmt.Errorf("%w: node %.80q has no open %s drift (`orchestrator drift` lists the open drift)", ErrNotFound, node, kind)
	}
	out := record.DriftResolved{Drift: dr, Resolution: res}
	who = orDefault(who, "unknown")
	task, msg, err := e.resolveDrift(ctx, node, kind, dr, res, who, correlation)
	if err != nil {
		return out, err
	}
	out.Task, out.Message = task, msg
	if err := e.dropDrift(ctx, dr, fmt.Sprintf("%s by %s: %s", res, who, out.Message), correlation); err != nil {
		return out, err
	}
	return out, nil
}

// checkResolveDrift checks ResolveDrift's arguments before it reads.
func checkResolveDrift(node string, kind record.DriftKind, res record.Resolution, correlation string) error {
	if len(node) > record.MaxFilterValueLen {
		return fmt.Errorf("%w: node name of %d bytes: at most %d", ErrNotFound, len(node), record.MaxFilterValueLen)
	}
	if _, err := record.ParseDriftKind(string(kind)); err != nil {
		return err
	}
	if _, err := record.ParseResolution(string(res)); err != nil {
		return err
	}
	return record.CheckCorrelation(correlation)
}

// resolveDrift does what a resolution of a node's open drift (dr) says: adopt the
// provisioner's status, accept the state observed, repair, release a
// leaked machine, or submit a destroy_nodes task to release a node's
// (the task's ID then). It returns what it did.
func (e *Engine) resolveDrift(ctx context.Context, node string, kind record.DriftKind, dr record.DriftRecord, res record.Resolution, who, correlation string) (task, msg string, err error) {
	switch {
	case res == record.ResolveAccept && kind == record.DriftStatus:
		rec, err := e.Adopt(ctx, node, "", who)
		if err != nil {
			return "", "", fmt.Errorf("accept status drift of node %s: adopt: %w", node, err)
		}
		return "", fmt.Sprintf("adopted: the record takes machine %s as %s (stage %s)", rec.MachineID, rec.Observed, rec.Stage), nil
	case res == record.ResolveAccept:
		var b batch
		b.put(collAccepted, dr.Key(), dr.Observed)
		if err := e.rec.write(ctx, &b); err != nil {
			return "", "", err
		}
		return "", "accepted: " + dr.Observed + " is not reported again while it lasts", nil
	case res == record.ResolveRepair:
		msg, err := e.repair(ctx, e.currentDesign(ctx), dr)
		if err != nil {
			return "", "", err
		}
		return "", "repaired: " + msg, nil
	case kind == record.DriftLeak: // release
		msg, err := e.repair(ctx, nil, dr)
		return "", msg, err
	}
	// release a node's machine: the destroy workflow
	t, err := e.Submit(ctx, record.Request{Action: record.ActionDestroyNodes, Requester: who, Correlation: correlation,
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{node}}}}})
	if err != nil {
		return "", "", fmt.Errorf("release node %s: %w", node, err)
	}
	return t.ID, "destroy_nodes task " + t.ID + " releases machine " + dr.MachineID, nil
}

// sweepLoop reconciles at start, then every interval (the current
// design's reconciliation interval, else SweepInterval; a negative
// SweepInterval: only at start).
func (e *Engine) sweepLoop(ctx context.Context) {
	for {
		if rep, err := e.Reconcile(ctx, "schedule"); err != nil {
			if ctx.Err() != nil {
				return
			}
			e.log.Warn().Err(err).Msg("reconciliation failed; it runs again at the next interval")
		} else if len(rep.Records) > 0 || len(rep.Cleared) > 0 {
			e.log.Warn().Int("open", len(rep.Records)).Int("detected", len(rep.Detected)).Int("cleared", len(rep.Cleared)).
				Int("repaired", len(rep.Repaired)).Int("leaks", len(rep.Leaks)).Msg("reconciliation found drift (see `orchestrator drift` and the events)")
		}
		if e.cfg.SweepInterval < 0 {
			return
		}
		every := e.reconcileInterval(ctx)
		e.recon.mu.Lock()
		e.recon.next = now().Add(every)
		e.recon.mu.Unlock()
		if !sleep(ctx, every) {
			return
		}
	}
}
