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

// transitions is MAAS's table of allowed status changes (the subset of
// NODE_TRANSITIONS in src/maasserver/node_status.py this simulator uses).
var transitions = map[int][]int{
	StatusNew:                 {StatusCommissioning, StatusMissing, StatusReady, StatusRetired, StatusBroken, StatusTesting},
	StatusCommissioning:       {StatusFailedCommissioning, StatusReady, StatusNew, StatusBroken, StatusTesting},
	StatusFailedCommissioning: {StatusCommissioning, StatusMissing, StatusRetired, StatusBroken, StatusTesting},
	StatusMissing:             {StatusNew, StatusReady, StatusBroken, StatusCommissioning},
	StatusReady:               {StatusCommissioning, StatusAllocated, StatusReserved, StatusRetired, StatusMissing, StatusBroken, StatusDeploying, StatusTesting},
	StatusReserved:            {StatusAllocated, StatusReady, StatusRetired, StatusBroken},
	StatusAllocated:           {StatusReady, StatusRetired, StatusMissing, StatusBroken, StatusDeploying, StatusReleasing, StatusDiskErasing},
	StatusDeploying:           {StatusAllocated, StatusDeployed, StatusFailedDeployment, StatusReleasing, StatusBroken},
	StatusFailedDeployment:    {StatusAllocated, StatusDeploying, StatusReleasing, StatusBroken, StatusRetired},
	StatusDeployed:            {StatusAllocated, StatusReleasing, StatusBroken, StatusDiskErasing, StatusRetired},
	StatusReleasing:           {StatusReady, StatusFailedReleasing, StatusDiskErasing, StatusBroken},
	StatusFailedReleasing:     {StatusReleasing, StatusReady, StatusBroken, StatusDiskErasing},
	StatusDiskErasing:         {StatusFailedDiskErasing, StatusReady, StatusBroken, StatusAllocated},
	StatusFailedDiskErasing:   {StatusDiskErasing, StatusReady, StatusBroken},
	StatusBroken:              {StatusCommissioning, StatusReady, StatusDeployed, StatusReleasing, StatusTesting, StatusRetired},
	StatusRetired:             {StatusReady, StatusBroken, StatusCommissioning},
	StatusTesting:             {StatusFailedTesting, StatusReady, StatusDeployed, StatusBroken},
	StatusFailedTesting:       {StatusTesting, StatusCommissioning, StatusBroken, StatusReady},
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
