package demo

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/lab"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// BaselineCount is what the baseline stage changed on one node's
// machine, counted by the lab: its simulated BMC's own state before the
// deploy against after it (Lab), and the lab's durations of that work
// (FloorSeconds). Plan is the engine's record, for comparison only.
type BaselineCount struct {
	Node string     `json:"node"`
	Lab  BMCChanges `json:"lab"`
	Text string     `json:"text"` // Lab in words
	Plan string     `json:"plan"` // the engine's recorded plan (have → want)
	// Seconds is how long the node's baseline stage took (the engine's
	// transitions); FloorSeconds the lab's own durations of what its BMC
	// ran (BaselineFloor): the stage cannot take less.
	Seconds      float64 `json:"seconds"`
	FloorSeconds float64 `json:"floor_seconds"`
}

// bmcState is what a lab machine's Redfish BMC holds at one moment.
type bmcState struct {
	firmware []simrf.FirmwareItem
	bios     map[string]any
	volumes  []simrf.Volume
	updates  simrf.UpdateStats
	applied  uint64 // the system resets that applied staged changes (AppliedResets)
}

// readBMC reads m's Redfish BMC (false: m has none).
func readBMC(m *lab.Machine) (bmcState, bool) {
	rf := m.Redfish()
	if rf == nil {
		return bmcState{}, false
	}
	cur, _ := rf.BIOS()
	return bmcState{firmware: rf.Firmware(), bios: cur, volumes: rf.Volumes(), updates: rf.Updates(), applied: rf.AppliedResets()}, true
}

// LabSnapshot is every Redfish BMC's state in a lab, by node.
type LabSnapshot map[string]bmcState

// SnapshotLab reads the state of every lab machine's Redfish BMC.
func SnapshotLab(l *lab.Lab) LabSnapshot {
	out := LabSnapshot{}
	for _, m := range l.Machines() {
		if s, ok := readBMC(m); ok {
			out[m.Name] = s
		}
	}
	return out
}

// BMCChanges is what changed on one BMC between two readings.
type BMCChanges struct {
	Firmware []FirmwareChange `json:"firmware,omitempty"`
	BIOS     []SettingChange  `json:"bios,omitempty"`    // attributes in effect
	Volumes  []simrf.Volume   `json:"volumes,omitempty"` // built since
	// Pending: BIOS settings and firmware versions staged and not in
	// effect after (0: every reset took).
	Pending         int    `json:"pending"`
	FirmwareUpdates uint64 `json:"firmware_updates"` // updates the BMC accepted
	FailedUpdates   uint64 `json:"failed_updates"`
	BMCResets       uint64 `json:"bmc_resets"`
	// ResetsDuringUpdate: system resets while an update ran (0: none
	// could have bricked the machine).
	ResetsDuringUpdate uint64 `json:"resets_during_update"`
	// SystemResets: the system resets that applied staged settings or
	// firmware (the BMC's AppliedResets).
	SystemResets uint64 `json:"system_resets"`
}

// FirmwareChange is one inventory item's version in effect, before and after.
type FirmwareChange struct {
	Item   string `json:"item"`
	Kind   string `json:"kind"`
	Device string `json:"device,omitempty"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// SettingChange is one BIOS attribute in effect, before and after.
type SettingChange struct {
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
}

// changes compares a BMC's state before with after.
func changes(before, after bmcState, m *lab.Machine) BMCChanges {
	var c BMCChanges
	was := map[string]string{}
	for _, f := range before.firmware {
		was[f.ID] = f.Version
	}
	for _, f := range after.firmware {
		if v, ok := was[f.ID]; ok && v != f.Version {
			c.Firmware = append(c.Firmware, FirmwareChange{Item: f.ID, Kind: f.Kind, Device: f.Device, From: v, To: f.Version})
		}
	}
	for name, v := range after.bios {
		if from := fmt.Sprint(before.bios[name]); from != fmt.Sprint(v) {
			c.BIOS = append(c.BIOS, SettingChange{Name: name, From: from, To: fmt.Sprint(v)})
		}
	}
	slices.SortFunc(c.BIOS, func(a, b SettingChange) int { return strings.Compare(a.Name, b.Name) })
	for _, v := range after.volumes {
		if !slices.ContainsFunc(before.volumes, func(o simrf.Volume) bool { return o.ID == v.ID }) {
			c.Volumes = append(c.Volumes, v)
		}
	}
	if rf := m.Redfish(); rf != nil {
		_, pending := rf.BIOS()
		c.Pending = len(pending) + len(rf.PendingFirmware())
	}
	c.FirmwareUpdates = after.updates.SimpleUpdates - before.updates.SimpleUpdates
	c.FailedUpdates = after.updates.Failed + after.updates.Lost - before.updates.Failed - before.updates.Lost
	c.BMCResets = after.updates.BMCResets - before.updates.BMCResets
	c.ResetsDuringUpdate = after.updates.ResetsDuringUpdate - before.updates.ResetsDuringUpdate
	c.SystemResets = after.applied - before.applied
	return c
}

// BaselineFloor is the least time a BMC needs for the changes c, by the
// lab's own durations d: each update, each BMC reset, each volume's
// build and each system reset, one after the other (a BMC runs one
// update at a time, and the engine resets the system once they are in).
func BaselineFloor(c BMCChanges, d simrf.Durations) time.Duration {
	return time.Duration(c.FirmwareUpdates)*d.Update + time.Duration(c.BMCResets)*d.BMCReset +
		time.Duration(len(c.Volumes))*d.VolumeBuild + time.Duration(c.SystemResets)*d.SystemReset
}

// Text says what changed in words.
func (c BMCChanges) Text() string {
	var parts []string
	for _, f := range c.Firmware {
		dev := ""
		if f.Device != "" {
			dev = " " + f.Device
		}
		parts = append(parts, fmt.Sprintf("%s firmware%s %s -> %s", f.Kind, dev, f.From, f.To))
	}
	for _, s := range c.BIOS {
		parts = append(parts, fmt.Sprintf("BIOS %s %s -> %s", s.Name, s.From, s.To))
	}
	for _, v := range c.Volumes {
		bays := make([]string, len(v.Drives))
		for i, b := range v.Drives {
			bays[i] = fmt.Sprint(b)
		}
		parts = append(parts, fmt.Sprintf("%s volume %s on bays %s built", v.RAIDType, v.Name, strings.Join(bays, ",")))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing changed")
	}
	pending := "nothing pending"
	if c.Pending > 0 {
		pending = fmt.Sprintf("%d setting(s) or version(s) still pending", c.Pending)
	}
	return fmt.Sprintf("%s (%s after the reset); %d firmware update(s), %d failed, %d BMC reset(s), %d system reset(s) that applied them",
		strings.Join(parts, "; "), pending, c.FirmwareUpdates, c.FailedUpdates, c.BMCResets, c.SystemResets)
}

// baselines reads, for each node whose record has a baseline plan of
// this task, what its lab BMC changed since before (SnapshotLab before
// the task), and raises the floor by the lab's durations of the
// baseline work on every Redfish machine (baselineFloor).
func (out *Run) baselines(ctx context.Context, env *labrun.Env, e *orchestrator.Engine, task string, d *design.Design, before LabSnapshot, start time.Time) error {
	recs, err := e.Nodes(ctx) // a node that failed its preflight has none
	if err != nil {
		return err
	}
	byName := map[string]record.NodeRecord{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	lab := map[string]BMCChanges{}
	floors := map[string]time.Duration{}
	for name, b := range before {
		m := env.Lab.Machine(name)
		if after, ok := readBMC(m); ok {
			lab[name] = changes(b, after, m)
			floors[name] = BaselineFloor(lab[name], m.Redfish().Durations())
		}
	}
	for _, res := range out.results {
		rec, ok := byName[res.Node]
		if !ok || rec.Baseline == nil || rec.Baseline.Task != task {
			continue
		}
		c := BaselineCount{Node: res.Node, Lab: lab[res.Node], Plan: orNothing(rec.Baseline.Summary()), FloorSeconds: floors[res.Node].Seconds()}
		c.Text = c.Lab.Text()
		for _, tr := range rec.History {
			if tr.Task == task && tr.From == record.StageBaseline && !res.Started.IsZero() {
				c.Seconds = tr.At.Sub(res.Started).Seconds()
				out.BaselineWallSeconds = max(out.BaselineWallSeconds, tr.At.Sub(start).Seconds())
			}
		}
		out.Baselines = append(out.Baselines, c)
	}
	out.raiseFloor(env, d, lab, floors, start)
	return nil
}

// raiseFloor adds the lab's baseline durations to the floor: a machine's
// baseline runs before its MAAS phases (its chain is both), and a Site's
// firmware updates run at most maxParallel at once (the engine's default
// when the Site sets none): floor = max(the floor of the MAAS phases, the
// longest chain, each Site's update time / its maxParallel).
func (out *Run) raiseFloor(env *labrun.Env, d *design.Design, lab map[string]BMCChanges, floors map[string]time.Duration, start time.Time) {
	floor := time.Duration(out.FloorSeconds * float64(time.Second))
	var baseline time.Duration
	perSite := map[string]time.Duration{}
	for name, bf := range floors {
		m := env.Lab.Machine(name)
		floor = max(floor, m.Timeline().Since(start).Floor()+bf)
		baseline = max(baseline, bf)
		if out.BMCDurations == nil {
			bd := m.Redfish().Durations()
			out.BMCDurations = &bd
		}
		site, limit := siteLimit(d, name)
		perSite[site] += time.Duration(lab[name].FirmwareUpdates) * m.Redfish().Durations().Update / time.Duration(limit)
	}
	for _, total := range perSite {
		baseline = max(baseline, total)
	}
	floor = max(floor, baseline)
	out.FloorSeconds, out.BaselineFloorSeconds = floor.Seconds(), baseline.Seconds()
	if out.FloorSeconds > 0 {
		out.WallOverFloor = math.Round(out.WallSeconds/out.FloorSeconds*1000) / 1000
	}
}

// siteLimit is the node's Site and its lifecycle.baseline.maxParallel
// (orchestrator.DefaultBaselineParallel when it sets none).
func siteLimit(d *design.Design, node string) (string, int) {
	n := d.Nodes[node]
	if n == nil {
		return "", orchestrator.DefaultBaselineParallel
	}
	s := d.SiteOf(n)
	if s == nil {
		return "", orchestrator.DefaultBaselineParallel
	}
	if p := s.Spec.Lifecycle.Baseline.MaxParallel; p != nil && *p > 0 {
		return s.Metadata.Name, *p
	}
	return s.Metadata.Name, orchestrator.DefaultBaselineParallel
}

func orNothing(s string) string {
	if s == "" {
		return "nothing to change"
	}
	return s
}

// baselineText writes what the baseline stage changed, node by node.
func (out Run) baselineText(w io.Writer) {
	if len(out.Baselines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nbaselines (what changed, read from each lab BMC before and after; the stage's time against the lab's durations of that work):")
	for _, c := range out.Baselines {
		fmt.Fprintf(w, "%s: %s; %.2fs (lab floor %.2fs)\n", c.Node, c.Text, c.Seconds, c.FloorSeconds)
	}
	fmt.Fprintf(w, "the baseline stage: %d node(s) through it %.2fs after the start, against a floor of %.2fs by the lab's durations\n",
		len(out.Baselines), out.BaselineWallSeconds, out.BaselineFloorSeconds)
}
