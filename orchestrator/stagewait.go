package orchestrator

import (
	"slices"
	"time"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// stageWait is how long the node's current stage waited on the
// provisioner or the hardware: from the call that first answered in
// progress (the provisioner asked, the machine's phase running), or from
// the stage's start when the machine was already in a phase then (a
// create that commissions), to the answer of the call that followed the
// last such wait (the call that saw the machine move on took part in
// the wait). The stage's transition event carries it
// (record.Event.ProvisionerWait); the rest of the stage's time is
// Slipway's own. A stage an engine restart interrupted counts only the
// waits after the restart.
type stageWait struct {
	asked    time.Time // when the stage's handler was last called
	busyFrom time.Time // the stage's start, when the machine was in a phase then
	from, to time.Time
	timing   bool // the running wait counts
}

// bmcStages wait on a BMC's power action when they wait on a timer.
var bmcStages = []record.Stage{record.StageOOBPrepare, record.StagePower, record.StageVerify}

// hardwareWait reports whether a wait of st is on the provisioner or the
// hardware: a machine's phase in the provisioner (the batched poll), a
// BMC's power action, or a BMC's firmware update. The images stage's
// wait on a sync and a wait for a firmware update slot (the Site's
// limit: Slipway's own) do not count.
func (r *nodeRun) hardwareWait(st step) bool {
	return st.poll && r.rec.MachineID != "" || slices.Contains(bmcStages, r.rec.Stage) ||
		r.rec.Stage == record.StageBaseline && r.slotWaitAt.IsZero()
}

// asking notes that the stage's handler is called: a wait that follows
// counts from here, when the provisioner was asked.
func (w *stageWait) asking() { w.asked = now() }

// begin starts a wait of the stage after its handler's in-progress
// answer; counted says whether it counts.
func (w *stageWait) begin(counted bool) {
	w.timing = counted
	if counted && w.from.IsZero() {
		w.from = w.asked
		if !w.busyFrom.IsZero() {
			w.from = w.busyFrom
		}
	}
}

// end ends the running wait: at the answer of the call that followed
// it, or where Slipway's own wait begins (the round gate).
func (w *stageWait) end() {
	if w.timing {
		w.to, w.timing = now(), false
	}
}

// take is the stage's wait in milliseconds, and starts the next stage's,
// which began at start with the machine in state: a machine already in
// a phase (busyStates) is waited on from the stage's start.
func (w *stageWait) take(start time.Time, state string) int64 {
	w.end()
	var ms int64
	if !w.from.IsZero() && w.to.After(w.from) {
		ms = w.to.Sub(w.from).Milliseconds()
	}
	*w = stageWait{}
	if slices.Contains(busyStates, state) {
		w.busyFrom = start
	}
	return ms
}
