package orchestrator

import (
	"slices"
	"testing"
)

// TestNaturalCompare: port names sort with their numbers as numbers.
func TestNaturalCompare(t *testing.T) {
	got := []string{"Ethernet12", "Ethernet4", "eth1/10", "Ethernet0", "eth1/9", "pxe-r01", "Ethernet04x", "Ethernet4"}
	slices.SortStableFunc(got, naturalCompare)
	want := []string{"Ethernet0", "Ethernet4", "Ethernet4", "Ethernet04x", "Ethernet12", "eth1/9", "eth1/10", "pxe-r01"}
	if !slices.Equal(got, want) {
		t.Errorf("sorted %v, want %v", got, want)
	}
}
