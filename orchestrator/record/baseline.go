package record

import (
	"fmt"
	"strings"
	"time"
)

// A hardware profile's baseline (firmware, BIOS settings, RAID volumes)
// is applied by the baseline stage: before oob-prepare in the prepare,
// deploy and redeploy workflows, and as the apply_baseline task of a
// deployed node:
//
//	apply_baseline: baseline → baselined
const (
	ActionApplyBaseline Action = "apply_baseline"

	StageBaseline  Stage = "baseline"
	StageBaselined Stage = "baselined" // terminal: apply_baseline done
)

// Baseline is a node's baseline plan and how far applying it got: what
// the stage read and decided (the plan, shown before anything changes),
// each firmware update's handle (saved before the engine waits on it, so
// that a restarted engine follows the same update), the reset and the
// verification.
type Baseline struct {
	Task    string           `json:"task,omitempty"` // the task that planned it
	Planned time.Time        `json:"planned,omitzero"`
	Plan    []BaselineChange `json:"plan,omitempty"`
	// Reboot: applying the plan needs a system reset.
	Reboot  bool             `json:"reboot,omitempty"`
	DryRun  bool             `json:"dry_run,omitempty"`
	Updates []FirmwareUpdate `json:"updates,omitempty"`
	// BIOS is the settings staged (name → value), Volumes the volumes
	// created or being built (by name).
	BIOS    map[string]string `json:"bios,omitempty"`
	Staged  bool              `json:"bios_staged,omitempty"`
	Volumes []VolumeBuild     `json:"volumes,omitempty"`
	// ResetAt, ResetDone: the reset was asked (both saved before the
	// power cycle: it is asked at most once, a restart does not ask it
	// again).
	ResetAt   time.Time `json:"reset_at,omitzero"`
	ResetDone bool      `json:"reset_done,omitempty"`
	Verified  time.Time `json:"verified,omitzero"`
}

// BaselineChange is one difference between the machine and its profile:
// Kind firmware (Item: the component, Target the inventory items), bios
// (Item: the attribute) or raid (Item: the volume).
type BaselineChange struct {
	Kind   string `json:"kind"`
	Item   string `json:"item"`
	Target string `json:"target,omitempty"`
	Have   string `json:"have"`
	Want   string `json:"want"`
}

func (c BaselineChange) String() string {
	t := ""
	if c.Target != "" {
		t = " (" + c.Target + ")"
	}
	return fmt.Sprintf("%s %s%s: %s → %s", c.Kind, c.Item, t, c.Have, c.Want)
}

// FirmwareUpdate is one firmware update of a baseline.
type FirmwareUpdate struct {
	Component string   `json:"component"`
	Version   string   `json:"version"`
	Targets   []string `json:"targets"`
	SHA256    string   `json:"sha256"`
	// Started is saved before the BMC is asked; Handle (its task
	// monitor) as soon as it answers, before the engine waits.
	Started  time.Time `json:"started,omitzero"`
	Handle   string    `json:"handle,omitempty"`
	Progress string    `json:"progress,omitempty"`
	// Seen: the BMC's last answer about it (a BMC resetting itself does
	// not answer for a while).
	Seen time.Time `json:"seen,omitzero"`
	Done bool      `json:"done,omitempty"`
}

// VolumeBuild is one RAID volume of the plan.
type VolumeBuild struct {
	Name    string    `json:"name"`
	Started time.Time `json:"started,omitzero"`
	Done    bool      `json:"done,omitempty"`
}

// Summary says the plan in one line ("" when nothing differs).
func (b *Baseline) Summary() string {
	if b == nil || len(b.Plan) == 0 {
		return ""
	}
	parts := make([]string, 0, len(b.Plan))
	for _, c := range b.Plan {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "; ")
}
