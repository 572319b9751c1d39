package record

import (
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// RecoveryStep is one step of a recovery plan: a provisioner recovery
// action (abort, mark-broken, mark-fixed) or a release.
type RecoveryStep string

// Recovery steps.
const (
	RecAbort      RecoveryStep = RecoveryStep(drivers.RecoveryAbort)
	RecMarkBroken RecoveryStep = RecoveryStep(drivers.RecoveryMarkBroken)
	RecMarkFixed  RecoveryStep = RecoveryStep(drivers.RecoveryMarkFixed)
	RecRelease    RecoveryStep = "release"
)

// Recovery is a recovery of a node's machine in progress, checkpointed
// in the node's record after each step.
type Recovery struct {
	// Trigger says what started it, e.g. "stage deploy did not finish
	// within 1h0m0s".
	Trigger string `json:"trigger"`
	// Observed is the machine's state the plan was made for.
	Observed string         `json:"observed"`
	Steps    []RecoveryStep `json:"steps"`
	Done     int            `json:"done"` // steps completed
	Then     string         `json:"then"` // fail | continue
	Started  time.Time      `json:"started"`
}
