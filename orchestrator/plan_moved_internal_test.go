package orchestrator

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestMovedNodeReleasedInItsOldSite: a node moved to another Site is
// released where its machine is, so its part of the plan names the old
// Site (whose lifecycle.destructive policy and provisioner the release
// concerns), its reasons the move; a node not moved keeps its Site.
func TestMovedNodeReleasedInItsOldSite(t *testing.T) {
	moved := classify(planInput{Name: "n1", Old: planTestNode(), New: planTestNode(), OldSite: "east", NewSite: "west", Rec: deployedRec()})
	if moved.Action != record.PlanRelease || moved.Site != "east" || !strings.Contains(strings.Join(moved.Reasons, " "), "moved from site east to site west") {
		t.Errorf("moved: %s in site %q (%q), want a release in east", moved.Action, moved.Site, moved.Reasons)
	}
	kept := classify(planInput{Name: "n1", Old: planTestNode(), New: planTestNode(), OldSite: "east", NewSite: "east", Rec: deployedRec()})
	if kept.Site != "east" || kept.Action.Destructive() {
		t.Errorf("kept: %s in site %q", kept.Action, kept.Site)
	}
}
