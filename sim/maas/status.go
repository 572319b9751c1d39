package maas

// Machine statuses, as MAAS numbers them (src/maascommon/enums/node.py).
const (
	StatusNew                      = 0
	StatusCommissioning            = 1
	StatusFailedCommissioning      = 2
	StatusMissing                  = 3
	StatusReady                    = 4
	StatusReserved                 = 5
	StatusDeployed                 = 6
	StatusRetired                  = 7
	StatusBroken                   = 8
	StatusDeploying                = 9
	StatusAllocated                = 10
	StatusFailedDeployment         = 11
	StatusReleasing                = 12
	StatusFailedReleasing          = 13
	StatusDiskErasing              = 14
	StatusFailedDiskErasing        = 15
	StatusRescueMode               = 16
	StatusEnteringRescueMode       = 17
	StatusFailedEnteringRescueMode = 18
	StatusExitingRescueMode        = 19
	StatusFailedExitingRescueMode  = 20
	StatusTesting                  = 21
	StatusFailedTesting            = 22
)

var statusNames = map[int]string{
	StatusNew: "New", StatusCommissioning: "Commissioning", StatusFailedCommissioning: "Failed commissioning",
	StatusMissing: "Missing", StatusReady: "Ready", StatusReserved: "Reserved", StatusDeployed: "Deployed",
	StatusRetired: "Retired", StatusBroken: "Broken", StatusDeploying: "Deploying", StatusAllocated: "Allocated",
	StatusFailedDeployment: "Failed deployment", StatusReleasing: "Releasing", StatusFailedReleasing: "Releasing failed",
	StatusDiskErasing: "Disk erasing", StatusFailedDiskErasing: "Failed disk erasing", StatusRescueMode: "Rescue mode",
	StatusEnteringRescueMode: "Entering rescue mode", StatusFailedEnteringRescueMode: "Failed to enter rescue mode",
	StatusExitingRescueMode: "Exiting rescue mode", StatusFailedExitingRescueMode: "Failed to exit rescue mode",
	StatusTesting: "Testing", StatusFailedTesting: "Failed testing",
}

// StatusName is MAAS's label of a status.
func StatusName(s int) string { return statusNames[s] }

// statusEnumNames are the NODE_STATUS names where they differ from the
// labels ("Releasing failed" is FAILED_RELEASING).
var statusEnumNames = map[int]string{
	StatusFailedReleasing:          "failed_releasing",
	StatusFailedEnteringRescueMode: "failed_entering_rescue_mode",
	StatusFailedExitingRescueMode:  "failed_exiting_rescue_mode",
}

// statusByName resolves the names the machines read filter accepts: the
// NODE_STATUS names in lower case ("ready", "failed_commissioning",
// "failed_releasing"), and the labels with spaces as underscores.
func statusByName(name string) (int, bool) {
	n := normalise(name)
	for k, v := range statusEnumNames {
		if v == n {
			return k, true
		}
	}
	for k, v := range statusNames {
		if normalise(v) == n {
			return k, true
		}
	}
	return 0, false
}

func normalise(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			out = append(out, c+'a'-'A')
		case c == ' ' || c == '-':
			out = append(out, '_')
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

// transitions is MAAS's table of allowed status changes
// (NODE_TRANSITIONS in src/maasserver/node_status.py), with a few moves
// the simulator makes in one step where MAAS passes through another
// state (Ready -> Deploying, Failed deployment -> Deploying, Disk erasing
// -> Allocated, and to Retired).
var transitions = map[int][]int{
	StatusNew: {StatusCommissioning, StatusTesting, StatusMissing, StatusReady, StatusRetired, StatusBroken,
		StatusEnteringRescueMode},
	StatusCommissioning: {StatusFailedCommissioning, StatusReady, StatusRetired, StatusMissing, StatusNew, StatusBroken,
		StatusTesting},
	StatusFailedCommissioning: {StatusCommissioning, StatusMissing, StatusRetired, StatusBroken, StatusEnteringRescueMode,
		StatusTesting},
	StatusReady: {StatusEnteringRescueMode, StatusCommissioning, StatusAllocated, StatusReserved, StatusRetired,
		StatusMissing, StatusBroken, StatusTesting, StatusDeploying},
	StatusReserved: {StatusReady, StatusAllocated, StatusRetired, StatusMissing, StatusBroken, StatusDiskErasing,
		StatusReleasing, StatusEnteringRescueMode, StatusTesting},
	StatusAllocated: {StatusReady, StatusRetired, StatusMissing, StatusBroken, StatusDeploying, StatusDiskErasing,
		StatusReleasing, StatusEnteringRescueMode, StatusTesting},
	StatusReleasing: {StatusNew, StatusAllocated, StatusReserved, StatusDeployed, StatusReady, StatusBroken,
		StatusMissing, StatusFailedDeployment, StatusFailedDiskErasing, StatusFailedReleasing, StatusDiskErasing},
	StatusDeploying: {StatusAllocated, StatusMissing, StatusBroken, StatusFailedDeployment, StatusDeployed, StatusReady,
		StatusDiskErasing, StatusReleasing},
	StatusFailedDeployment: {StatusAllocated, StatusMissing, StatusBroken, StatusReady, StatusDiskErasing,
		StatusReleasing, StatusEnteringRescueMode, StatusTesting, StatusDeploying, StatusRetired},
	StatusDeployed: {StatusAllocated, StatusMissing, StatusBroken, StatusReady, StatusDiskErasing, StatusReleasing,
		StatusEnteringRescueMode, StatusTesting, StatusRetired},
	StatusMissing: {StatusNew, StatusReady, StatusAllocated, StatusCommissioning, StatusBroken,
		StatusEnteringRescueMode, StatusTesting},
	StatusRetired: {StatusNew, StatusReady, StatusMissing, StatusBroken, StatusEnteringRescueMode, StatusTesting,
		StatusCommissioning},
	StatusBroken: {StatusCommissioning, StatusReady, StatusDiskErasing, StatusReleasing, StatusEnteringRescueMode,
		StatusTesting, StatusDeployed, StatusRetired},
	StatusFailedReleasing: {StatusReleasing, StatusDiskErasing, StatusReady, StatusBroken, StatusTesting},
	StatusDiskErasing: {StatusBroken, StatusDiskErasing, StatusFailedDiskErasing, StatusReady, StatusReleasing,
		StatusAllocated},
	StatusFailedDiskErasing: {StatusDiskErasing, StatusReleasing, StatusBroken, StatusAllocated, StatusReady,
		StatusEnteringRescueMode, StatusTesting},
	StatusEnteringRescueMode: {StatusReady, StatusBroken, StatusDeployed, StatusRescueMode,
		StatusFailedEnteringRescueMode, StatusExitingRescueMode},
	StatusFailedEnteringRescueMode: {StatusBroken, StatusEnteringRescueMode, StatusExitingRescueMode, StatusTesting},
	StatusRescueMode:               {StatusBroken, StatusExitingRescueMode, StatusTesting},
	StatusExitingRescueMode: {StatusNew, StatusBroken, StatusFailedCommissioning, StatusReady, StatusReserved,
		StatusAllocated, StatusFailedDeployment, StatusDeployed, StatusMissing, StatusRetired, StatusFailedReleasing,
		StatusFailedDiskErasing, StatusRescueMode, StatusFailedEnteringRescueMode, StatusFailedExitingRescueMode,
		StatusFailedTesting},
	StatusFailedExitingRescueMode: {StatusBroken, StatusExitingRescueMode, StatusTesting},
	StatusTesting: {StatusBroken, StatusNew, StatusReady, StatusReserved, StatusAllocated, StatusDeployed,
		// NODE_TESTING_RESET_READY_TRANSITIONS
		StatusCommissioning, StatusFailedDeployment, StatusMissing, StatusRetired, StatusFailedReleasing,
		StatusFailedDiskErasing, StatusFailedEnteringRescueMode, StatusFailedExitingRescueMode, StatusFailedTesting},
	StatusFailedTesting: {StatusCommissioning, StatusBroken, StatusMissing, StatusEnteringRescueMode, StatusTesting,
		StatusReady, StatusDeployed},
}

// rescueOrTesting are the statuses MAAS does not record as a machine's
// previous status when it leaves them (pre_save_update_status in
// src/maasserver/models/signals/nodes.py): leaving rescue mode or testing
// goes back to the status before it.
func rescueOrTesting(st int) bool {
	switch st {
	case StatusRescueMode, StatusEnteringRescueMode, StatusFailedEnteringRescueMode, StatusExitingRescueMode,
		StatusFailedExitingRescueMode, StatusTesting:
		return true
	}
	return false
}

// canMove reports whether MAAS allows from -> to.
func canMove(from, to int) bool {
	for _, t := range transitions[from] {
		if t == to {
			return true
		}
	}
	return false
}
