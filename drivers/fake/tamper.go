package fake

import (
	"slices"
	"sort"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// platformApplied makes the node's machine report the node's tags and
// kernel parameters (as the MAAS driver does: tags sorted, kernel
// parameters key=value sorted by key, "true" a bare flag).
func (f *Server) platformApplied(n drivers.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.find(n.NodeRef)
	if m == nil {
		return
	}
	m.Tags = slices.Sorted(slices.Values(n.Tags))
	words := make([]string, 0, len(n.Platform.KernelParams))
	for k, v := range n.Platform.KernelParams {
		if v == "true" {
			words = append(words, k)
		} else {
			words = append(words, k+"="+v)
		}
	}
	sort.Strings(words)
	m.KernelOptions = strings.Join(words, " ")
}

// Tampering is a change made to a machine behind the orchestrator's back
// (a test's); nil fields are left alone.
type Tampering struct {
	Hostname      *string
	Tags          []string // nil: unchanged; empty: none
	KernelOptions *string
	// Unmark removes the ownership marker (the machine stays allocated).
	Unmark bool
}

// Tamper changes the machine with the given ID as someone working in the
// provisioner directly would; false when there is no such machine.
func (f *Server) Tamper(machineID string, t Tampering) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.machines[machineID]
	if m == nil {
		return false
	}
	if t.Hostname != nil {
		m.Hostname = *t.Hostname
	}
	if t.Tags != nil {
		m.Tags = slices.Sorted(slices.Values(t.Tags))
	}
	if t.KernelOptions != nil {
		m.KernelOptions = *t.KernelOptions
	}
	if t.Unmark {
		m.unmarked, m.OwnerNode = true, ""
	}
	return true
}
