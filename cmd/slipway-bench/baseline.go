package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/gensite"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/labrun/demo"
	"github.com/slipway-dev/slipway/sim/redfish"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// bench-baseline: N generated nodes of a Redfish hardware profile with a
// baseline (one BIOS firmware update that takes effect at the system
// reset, two BIOS settings, a RAID-1 volume over two bay drives), each
// machine with its own simulated Redfish BMC (TLS, sim/redfish), deployed
// by the engine through the real Redfish driver (the baseline stage
// first). Outcomes are counted from each BMC's own state before and after
// (demo.BMCChanges); the floor is the lab's own durations.

// baselineBench are bench-baseline's settings.
type baselineBench struct {
	nodes, maxParallel int
	timeScale          float64
	timeout            time.Duration
	log                bool // the lab's and the engine's log on stderr
}

// Bounds of bench-baseline's settings.
const (
	maxBenchBaselineNodes = 2000
	maxBenchBaselineWait  = 2 * time.Hour
	benchBIOSFrom         = "2.1.0"
	benchBIOSTo           = "2.19.1"
	benchBIOSFile         = "gen-bios-2.19.1.bin"
)

// benchBIOS are the BIOS settings the bench's profile wants (off the
// lab's defaults).
var benchBIOS = map[string]string{"UsbControl": "UsbDisabled", "NicBoot2": "NetworkBoot"}

// BaselineResult is bench-baseline's outcome.
type BaselineResult struct {
	Nodes       int     `json:"nodes"`
	MaxParallel int     `json:"max_parallel"`
	TimeScale   float64 `json:"time_scale"`
	Deployed    int     `json:"deployed"` // the lab's count
	// Counted from each BMC: at the wanted BIOS version, both settings in
	// effect with nothing pending, the RAID-1 volume built, exactly one
	// update accepted (0 second updates), none failed, no reset during an
	// update, one system reset that applied the staged changes.
	AtVersion, BIOSApplied, VolumeBuilt, OneUpdate, OneReset, ResetsDuringUpdate int
	// Baseline time per node (the stage's, per node) and the stage's
	// wall across the site against the lab's floor.
	PerNodeP50, PerNodeP95, PerNodeMax float64
	WallSeconds                        float64 `json:"baseline_wall_seconds"`
	FloorSeconds                       float64 `json:"baseline_floor_seconds"`
	WallOverFloor                      float64 `json:"wall_over_floor"`
	// The lab's durations the floor is made of.
	UpdateSeconds, BMCResetSeconds, VolumeBuildSeconds, SystemResetSeconds float64
	DeployWallSeconds                                                      float64 `json:"deploy_wall_seconds"`
	DeployFloorSeconds                                                     float64 `json:"deploy_floor_seconds"`
	// Failures: the engine's reasons for nodes it did not deploy (the
	// first 20).
	Failures []demo.NodeFailure `json:"failures,omitempty"`
}

func (a *app) benchBaselineCmd() *cobra.Command {
	o := baselineBench{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench-baseline [--nodes N] [--max-parallel P] [--time-scale S] [--json]",
		Short: "Deploy N generated nodes of a Redfish profile with a baseline in the lab (one simulated Redfish BMC each); the baseline stage's time per node against the lab's own durations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return usageErr(err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			r, err := runBaselineBench(ctx, o)
			if err != nil {
				return err
			}
			return r.write(a.stdout, asJSON)
		},
	}
	cmd.Flags().IntVar(&o.nodes, "nodes", 1000, fmt.Sprintf("generated nodes, each with its own Redfish BMC (1..%d)", maxBenchBaselineNodes))
	cmd.Flags().IntVar(&o.maxParallel, "max-parallel", 32, "the Site's lifecycle.baseline.maxParallel: firmware updates at once (1..1024)")
	cmd.Flags().Float64Var(&o.timeScale, "time-scale", 0.01, "scales the lab's MAAS phases (commissioning, deployment), its BMCs' update and reset times (4 min and 2 min at scale 1) and the engine's waits")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long (at most 2h)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVar(&o.log, "log", false, "write the lab's and the engine's log (info) to stderr")
	return cmd
}

func (o baselineBench) check() error {
	switch {
	case o.nodes < 1 || o.nodes > maxBenchBaselineNodes:
		return fmt.Errorf("--nodes %d: 1..%d", o.nodes, maxBenchBaselineNodes)
	case o.maxParallel < 1 || o.maxParallel > design.MaxBaselineParallel:
		return fmt.Errorf("--max-parallel %d: 1..%d", o.maxParallel, design.MaxBaselineParallel)
	case o.timeScale <= 0 || o.timeScale > 1:
		return fmt.Errorf("--time-scale %g: more than 0, at most 1", o.timeScale)
	case o.timeout <= 0 || o.timeout > maxBenchBaselineWait:
		return fmt.Errorf("--timeout %s: more than 0, at most %s", o.timeout, maxBenchBaselineWait)
	}
	return nil
}

func (o baselineBench) logger() zerolog.Logger {
	if !o.log {
		return zerolog.Nop()
	}
	return zerolog.New(os.Stderr).Level(zerolog.InfoLevel).With().Timestamp().Logger()
}

// runBaselineBench writes and loads the generated site, deploys it in
// the lab and counts the outcome from the lab's BMCs.
func runBaselineBench(ctx context.Context, o baselineBench) (BaselineResult, error) {
	dir, err := os.MkdirTemp("", "slipway-bench-baseline-")
	if err != nil {
		return BaselineResult{}, err
	}
	defer os.RemoveAll(dir)
	d, err := baselineSite(ctx, filepath.Join(dir, "site"), o)
	if err != nil {
		return BaselineResult{}, err
	}
	state := filepath.Join(dir, "state.db")
	st, err := bolt.Open(state, bolt.Options{})
	if err != nil {
		return BaselineResult{}, err
	}
	defer st.Close()
	run, err := demo.Deploy(ctx, demo.Options{Design: d, Store: st, StatePath: state, TimeScale: o.timeScale, NoFabric: true,
		Out: io.Discard, Err: io.Discard, Log: o.logger()})
	if err != nil {
		return BaselineResult{}, fmt.Errorf("deploy the generated site: %w", err)
	}
	return baselineResult(o, run), nil
}

// baselineSite writes a generated site of o.nodes nodes into dir, its two
// hardware profiles managed over Redfish with the bench's baseline and
// its Site's lifecycle.baseline.maxParallel, and loads it.
func baselineSite(ctx context.Context, dir string, o baselineBench) (*design.Design, error) {
	if _, err := gensite.Write(dir, gensite.Options{Nodes: o.nodes}); err != nil {
		return nil, err
	}
	site, err := os.ReadFile(filepath.Join(dir, "site.yaml"))
	if err != nil {
		return nil, err
	}
	const at = "spec:\n  domain: synthetic.example.net\n"
	if !strings.Contains(string(site), at) {
		return nil, errors.New("the generated Site has no domain line to put the baseline policy after")
	}
	site = []byte(strings.Replace(string(site), at, at+fmt.Sprintf("  lifecycle:\n    baseline: {reboots: allow, maxParallel: %d}\n", o.maxParallel), 1))
	if err := os.WriteFile(filepath.Join(dir, "site.yaml"), site, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "hardware.yaml"), []byte(baselineHardware()), 0o600); err != nil {
		return nil, err
	}
	return labrun.LoadGenerated(ctx, dir)
}

// baselineHardware is the generated site's hardware profiles (gensite's
// aliases and addresses) over Redfish with the baseline: the BIOS
// firmware from the lab's 2.1.0 (the expect block's minimum) to 2.19.1,
// as a file in the firmware directory whose SHA-256 is the lab image's
// (labrun serves it), two BIOS settings, a RAID-1 boot volume.
func baselineHardware() string {
	sum := sha256Hex(redfish.LabImage("bios", benchBIOSTo, labrun.LabImageSize))
	var b strings.Builder
	for i, name := range []string{"gen-a", "gen-b"} {
		fmt.Fprintf(&b, `---
apiVersion: slipway/v1
kind: HardwareProfile
metadata: {name: %s}
spec:
  vendor: Example
  model: X%d
  oob: {type: redfish}
  pxe: {interface: pxe0}
  deviceAliases:
    pxe0: {bus: pci, address: "0000:1%d:00.0"}
    data0: {bus: pci, address: "0000:3%d:00.0"}
    data1: {bus: pci, address: "0000:3%d:00.1"}
    bootdisk: {bus: nvme, address: "0000:5%d:00.0"}
    os0: {bus: bay, address: "0"}
    os1: {bus: bay, address: "1"}
  bios:
    attributes: {UsbControl: %s, NicBoot2: %s}
  firmware:
    - {component: bios, version: "%s", image: {file: %s, sha256: %s}}
  raid:
    volumes:
      - {name: os, level: raid1, drives: [os0, os1], boot: true}
  expect:
    firmware: {biosMin: %s}
`, name, i+1, i, i, i, i, benchBIOS["UsbControl"], benchBIOS["NicBoot2"], benchBIOSTo, benchBIOSFile, sum, benchBIOSFrom)
	}
	return b.String()
}

// baselineResult counts the run's outcome from the lab's BMCs (each
// node's demo.BMCChanges) and its times.
func baselineResult(o baselineBench, run demo.Run) BaselineResult {
	r := BaselineResult{Nodes: run.Nodes, MaxParallel: o.maxParallel, TimeScale: o.timeScale, Deployed: run.Deployed,
		WallSeconds: run.BaselineWallSeconds, FloorSeconds: run.BaselineFloorSeconds,
		DeployWallSeconds: run.WallSeconds, DeployFloorSeconds: run.FloorSeconds, Failures: run.Failures}
	var per []float64
	for _, b := range run.Baselines {
		per = append(per, b.Seconds)
		c := b.Lab
		if len(c.Firmware) == 1 && c.Firmware[0].Kind == "bios" && c.Firmware[0].From == benchBIOSFrom && c.Firmware[0].To == benchBIOSTo {
			r.AtVersion++
		}
		if biosApplied(c) {
			r.BIOSApplied++
		}
		if len(c.Volumes) == 1 && c.Volumes[0].RAIDType == "RAID1" && slices.Equal(c.Volumes[0].Drives, []int{0, 1}) && !c.Volumes[0].Building {
			r.VolumeBuilt++
		}
		if c.FirmwareUpdates == 1 && c.FailedUpdates == 0 {
			r.OneUpdate++
		}
		if c.SystemResets == 1 {
			r.OneReset++
		}
		r.ResetsDuringUpdate += int(c.ResetsDuringUpdate)
	}
	slices.Sort(per)
	if n := len(per); n > 0 {
		r.PerNodeP50, r.PerNodeP95, r.PerNodeMax = per[n/2], per[min(n-1, n*95/100)], per[n-1]
	}
	if r.FloorSeconds > 0 {
		r.WallOverFloor = r.WallSeconds / r.FloorSeconds
	}
	if d := run.BMCDurations; d != nil {
		r.UpdateSeconds, r.BMCResetSeconds, r.VolumeBuildSeconds, r.SystemResetSeconds = d.Update.Seconds(), d.BMCReset.Seconds(), d.VolumeBuild.Seconds(), d.SystemReset.Seconds()
	}
	return r
}

// biosApplied: the bench's settings in effect, nothing pending.
func biosApplied(c demo.BMCChanges) bool {
	if c.Pending != 0 || len(c.BIOS) != len(benchBIOS) {
		return false
	}
	for _, s := range c.BIOS {
		if benchBIOS[s.Name] != s.To {
			return false
		}
	}
	return true
}

// ok: every node deployed and brought to the baseline, by the lab's count.
func (r BaselineResult) ok() bool {
	n := r.Nodes
	return n > 0 && r.Deployed == n && r.AtVersion == n && r.BIOSApplied == n && r.VolumeBuilt == n && r.OneUpdate == n &&
		r.OneReset == n && r.ResetsDuringUpdate == 0
}

func (r BaselineResult) write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "bench-baseline: %d nodes (one Redfish BMC each), maxParallel %d, time scale %g; %d deployed (the lab's count)\n",
			r.Nodes, r.MaxParallel, r.TimeScale, r.Deployed)
		fmt.Fprintf(w, "from the BMCs: %d at BIOS %s, %d with both settings in effect and nothing pending, %d with the RAID-1 volume, %d with exactly one update (none failed), %d with one system reset applying it, %d resets during an update\n",
			r.AtVersion, benchBIOSTo, r.BIOSApplied, r.VolumeBuilt, r.OneUpdate, r.OneReset, r.ResetsDuringUpdate)
		fmt.Fprintf(w, "baseline per node: p50 %.2fs, p95 %.2fs, max %.2fs; the lab's durations: update %.2fs, BMC reset %.2fs (not needed: a BIOS update), volume build %.2fs, system reset %.2fs\n",
			r.PerNodeP50, r.PerNodeP95, r.PerNodeMax, r.UpdateSeconds, r.BMCResetSeconds, r.VolumeBuildSeconds, r.SystemResetSeconds)
		fmt.Fprintf(w, "baseline stage across the site: %.2fs against a floor of %.2fs (max(one node's chain, %d updates x %.2fs / %d)): %.2fx; the whole deploy %.2fs against %.2fs\n",
			r.WallSeconds, r.FloorSeconds, r.OneUpdate, r.UpdateSeconds, r.MaxParallel, r.WallOverFloor, r.DeployWallSeconds, r.DeployFloorSeconds)
		for _, f := range r.Failures {
			fmt.Fprintf(w, "not deployed: %s at %s: %s\n", f.Node, f.Stage, f.Reason)
		}
	}
	if !r.ok() {
		return errors.New("not every node reached the baseline by the lab's count (see the counts above)")
	}
	return nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
