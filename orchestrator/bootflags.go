package orchestrator

import (
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// bootFlagsCleared handles a PXE override the driver set and found read
// back with the right device but its valid bit clear
// (drivers.BootFlagsCleared: OpenIPMI's ipmi_sim, and real BMCs at once or
// after the spec's 60 seconds). It is no failure: the node sets PXE again
// right before its power change (powerForPXE) and an event says why.
func (r *nodeRun) bootFlagsCleared(res drivers.Result, bios string) (step, bool) {
	if res.Status != drivers.StatusDone || !strings.Contains(res.Message, drivers.BootFlagsCleared) {
		return step{}, false
	}
	r.rec.PXEBeforePower = true
	r.save(r.event("info", "boot-flags", "%s; PXE is set again right before the power change", res.Message))
	return sub("%sthe BMC clears the boot override's valid bit: PXE is set again right before the power change", bios), true
}
