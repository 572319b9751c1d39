package record

import (
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// Lifecycle depth (#16): decommissioning, rescue mode and hardware tests.
// Each is a node workflow like deploy's: a sequence of checkpointed
// stages, so the task verbs (retry, resume, rerun, restart-clean, cancel)
// and manual intervention apply to them as they do to a deploy.
//
//	decommission_nodes: releasing (erasing the disks as the node's
//	    policy says) → released; with options.delete:
//	    releasing → deleting → deleted
//	rescue_enter:       rescue → rescue-mode
//	rescue_exit:        rescue-exit → deployed
//	test_nodes:         testing → tested
const (
	ActionDecommissionNodes Action = "decommission_nodes"
	ActionRescueEnter       Action = "rescue_enter"
	ActionRescueExit        Action = "rescue_exit"
	ActionTestNodes         Action = "test_nodes"
)

// The stages of those workflows.
const (
	StageDeleting   Stage = "deleting"    // decommission: the machine is removed from the provisioner
	StageRescue     Stage = "rescue"      // rescue_enter: the machine boots the rescue system
	StageRescueExit Stage = "rescue-exit" // rescue_exit: back to its deployed OS
	StageTesting    Stage = "testing"     // test_nodes: the provisioner's hardware tests run
	// Terminal stages.
	StageDeleted    Stage = "deleted"     // decommission with delete: the machine is gone from the provisioner
	StageRescueMode Stage = "rescue-mode" // in the rescue system; rescue_exit leaves it
	StageTested     Stage = "tested"      // every hardware test passed
)

// LifecycleDeleted: decommissioned, the machine removed from the
// provisioner (a decommission without delete leaves it released).
const LifecycleDeleted Lifecycle = "deleted"

// TaskOptions are an action's options: decommission_nodes and
// destroy_nodes take erase (and delete), apply_baseline reboot and
// dry_run.
type TaskOptions struct {
	// Erase overrides the design's erase policy for this task's releases
	// (none | quick | secure; "" keeps the design's).
	Erase string `json:"erase,omitempty"`
	// Delete removes the machine from the provisioner once it is
	// released (decommission_nodes only). Without it the machine stays
	// in the provisioner, Ready, its disks erased as the policy says: the
	// storage-only cleanup.
	Delete bool `json:"delete,omitempty"`
	// Reboot lets apply_baseline reboot a deployed node when its plan
	// needs a reset and the Site's lifecycle.baseline.reboots is deny.
	Reboot bool `json:"reboot,omitempty"`
	// DryRun: apply_baseline records each node's plan and changes
	// nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// Site and Image narrow sync_images to one Site and one Image
	// document ("": all the design's).
	Site  string `json:"site,omitempty"`
	Image string `json:"image,omitempty"`
}

// Check validates the options of action a (nil: none).
func (o *TaskOptions) Check(a Action) error {
	if o == nil {
		return nil
	}
	if o.Erase != "" && !drivers.Erase(o.Erase).Valid() {
		return fmt.Errorf("options.erase %.40q: use none, quick or secure (or leave it out for the design's policy)", o.Erase)
	}
	switch {
	case o.Delete && a != ActionDecommissionNodes:
		return fmt.Errorf("options.delete applies to %s only, not %s", ActionDecommissionNodes, a)
	case o.Erase != "" && a != ActionDecommissionNodes && a != ActionDestroyNodes:
		return fmt.Errorf("options.erase applies to %s and %s only, not %s", ActionDecommissionNodes, ActionDestroyNodes, a)
	case (o.Reboot || o.DryRun) && a != ActionApplyBaseline:
		return fmt.Errorf("options.reboot and options.dry_run apply to %s only, not %s", ActionApplyBaseline, a)
	case (o.Site != "" || o.Image != "") && a != ActionSyncImages:
		return fmt.Errorf("options.site and options.image apply to %s only, not %s", ActionSyncImages, a)
	case len(o.Site) > 253 || len(o.Image) > 253:
		return fmt.Errorf("options.site and options.image are names of at most 253 bytes")
	}
	return nil
}

// describe says the options for the task's event ("" for none).
func (o *TaskOptions) Describe() string {
	if o == nil {
		return ""
	}
	var parts []string
	if o.Erase != "" {
		parts = append(parts, "erase "+o.Erase)
	}
	if o.Delete {
		parts = append(parts, "delete")
	}
	if o.Reboot {
		parts = append(parts, "reboot")
	}
	if o.DryRun {
		parts = append(parts, "dry run")
	}
	if o.Site != "" {
		parts = append(parts, "site "+o.Site)
	}
	if o.Image != "" {
		parts = append(parts, "image "+o.Image)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
