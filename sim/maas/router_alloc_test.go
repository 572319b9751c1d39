package maas

import "testing"

// TestMatchAllocatesOnlyTheChosenParams: finding the handler of an
// interface write builds the path parameters of the route it chose and no
// other. Every route of the path's shape (each method and op) used to make
// its own map: some 200 MB of the lab's allocation in a 10,000-node
// configure window.
func TestMatchAllocatesOnlyTheChosenParams(t *testing.T) {
	s := New(Options{})
	const path = "/nodes/abc123/interfaces/17/"
	fn, params, err := s.match("POST", path, "link_subnet")
	if err != nil || fn == nil {
		t.Fatalf("no handler for link_subnet: %v", err)
	}
	if len(params) != 2 || params["id"] != "17" || params["system_id"] != "abc123" {
		t.Fatalf("params %v, want the node and the interface", params)
	}
	allocs := testing.AllocsPerRun(100, func() { _, _, _ = s.match("POST", path, "link_subnet") })
	if allocs > 3 { // the split path, the map and its storage
		t.Fatalf("match allocated %v times, want at most 3", allocs)
	}
}
