package server

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestCurrentDesignOfPreviousRelease: a revision stored with the names of
// the releases before snake_case (camelCase) is read by the CLI's in-process
// engine with its renamed kinds and fields intact (before DecodeRevision,
// plain encoding/json dropped every renamed field: no links, no host
// profiles).
func TestCurrentDesignOfPreviousRelease(t *testing.T) {
	d := designtest.Example(t)
	body, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	old := designtest.OldSpelling(t, body)
	sum := sha256.Sum256(old)
	st := memory.New()
	ctx := t.Context()
	if _, err := st.PutRevision(ctx, statestore.Revision{ID: hex.EncodeToString(sum[:]), Created: time.Now(), Design: old}); err != nil {
		t.Fatal(err)
	}
	got, err := CurrentDesign(ctx, st, "state.db")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.NetworkLinks) != len(d.NetworkLinks) || len(got.HostProfiles) != len(d.HostProfiles) || len(got.HardwareProfiles) != len(d.HardwareProfiles) {
		t.Errorf("links %d/%d, host profiles %d/%d, hardware profiles %d/%d", len(got.NetworkLinks), len(d.NetworkLinks),
			len(got.HostProfiles), len(d.HostProfiles), len(got.HardwareProfiles), len(d.HardwareProfiles))
	}
	for name, n := range d.Nodes {
		g := got.Nodes[name]
		if g == nil {
			t.Errorf("node %s missing", name)
		} else if g.Spec.HostProfile != n.Spec.HostProfile || g.Spec.HostProfile == "" {
			t.Errorf("node %s: host profile %q, want %q", name, g.Spec.HostProfile, n.Spec.HostProfile)
		}
	}
}
