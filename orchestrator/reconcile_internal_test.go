package orchestrator

import (
	"testing"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// A new drift's event says what was expected and observed, then what to
// do about it: what ending a lost deployment did, how to take or put back
// a status drift, how to free or attach a leaked machine; other kinds
// say no more.
func TestDriftDetectedMessage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dr    record.DriftRecord
		lost  bool
		ended string
		want  string
	}{
		{name: "status",
			dr:   record.DriftRecord{Kind: record.DriftStatus, Expected: "Deployed", Observed: "Ready"},
			want: "status drift: expected Deployed, observed Ready; `adopt` (or resolve with accept) takes the provisioner's state, a task puts the machine back"},
		{name: "lost deployment: what ending it did, not the status hint",
			dr:   record.DriftRecord{Kind: record.DriftStatus, Expected: "Deployed", Observed: "(gone)"},
			lost: true, ended: "; the deployment ended, its token revoked",
			want: "status drift: expected Deployed, observed (gone); the deployment ended, its token revoked"},
		{name: "leak names its machine",
			dr:   record.DriftRecord{Kind: record.DriftLeak, MachineID: "abc123", Expected: "none", Observed: "machine abc123 (Deployed)"},
			want: "leak drift: expected none, observed machine abc123 (Deployed); resolve with release to free it, or `adopt NODE --machine abc123` to attach it to a node of the design"},
		{name: "an attribute: no hint",
			dr:   record.DriftRecord{Kind: record.DriftHostname, Expected: "cmp01", Observed: "cmp01-old"},
			want: "hostname drift: expected cmp01, observed cmp01-old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := driftDetectedMessage(tc.dr, tc.lost, tc.ended); got != tc.want {
				t.Errorf("message:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
