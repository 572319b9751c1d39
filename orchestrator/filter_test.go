package orchestrator_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestFilterSelect checks node selection on the example site's 8 nodes:
//
//	r01-cmp01 r01-cmp02 r01-cmp03  compute      rack r01
//	r01-gpu01                      compute-gpu  rack r01  tags gpu, nvidia-t4
//	r02-cmp01 r02-cmp02            compute      rack r02
//	r02-gpu01                      compute-gpu  rack r02  tags gpu, nvidia-t4
//	r02-gpu02                      compute-gpu  rack r02  tags gpu, nvidia-a2
func TestFilterSelect(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	all := []string{"r01-cmp01", "r01-cmp02", "r01-cmp03", "r01-gpu01", "r02-cmp01", "r02-cmp02", "r02-gpu01", "r02-gpu02"}
	if diff := cmp.Diff(all, d.NodeNames()); diff != "" {
		t.Fatalf("the example site changed (-want +got):\n%s", diff)
	}
	type set = design.NodeFilter
	tests := []struct {
		name   string
		filter record.Filter
		want   []string
	}{
		{"empty filter selects all", record.Filter{}, all},
		{"empty intersection selects all", record.Filter{Type: "intersection"}, all},
		{"one empty set selects all", record.Filter{Sets: []set{{}}}, all},
		{"names", record.Filter{Sets: []set{{Names: []string{"r02-cmp02", "r01-cmp01", "no-such-node"}}}},
			[]string{"r01-cmp01", "r02-cmp02"}},
		{"racks", record.Filter{Sets: []set{{Racks: []string{"r01"}}}},
			[]string{"r01-cmp01", "r01-cmp02", "r01-cmp03", "r01-gpu01"}},
		{"several racks", record.Filter{Sets: []set{{Racks: []string{"r01", "r02"}}}}, all},
		{"unknown rack", record.Filter{Sets: []set{{Racks: []string{"r99"}}}}, nil},
		{"labels", record.Filter{Sets: []set{{Labels: map[string]string{"role": "gpu"}}}},
			[]string{"r01-gpu01", "r02-gpu01", "r02-gpu02"}},
		{"all labels of a set must hold", record.Filter{Sets: []set{{Labels: map[string]string{"role": "gpu", "rack": "r02"}}}},
			[]string{"r02-gpu01", "r02-gpu02"}},
		{"label value must match", record.Filter{Sets: []set{{Labels: map[string]string{"role": "storage"}}}}, nil},
		{"tags (any of them)", record.Filter{Sets: []set{{Tags: []string{"nvidia-a2", "nvidia-t4"}}}},
			[]string{"r01-gpu01", "r02-gpu01", "r02-gpu02"}},
		{"inherited tag removed", record.Filter{Sets: []set{{Tags: []string{"nvidia-t4"}}}},
			[]string{"r01-gpu01", "r02-gpu01"}},
		{"every criterion of a set must hold", record.Filter{Sets: []set{{Racks: []string{"r02"}, Tags: []string{"gpu"}, Names: []string{"r01-gpu01", "r02-gpu02", "r02-cmp01"}}}},
			[]string{"r02-gpu02"}},
		{"union by default", record.Filter{Sets: []set{{Names: []string{"r01-cmp01"}}, {Labels: map[string]string{"role": "gpu", "rack": "r02"}}}},
			[]string{"r01-cmp01", "r02-gpu01", "r02-gpu02"}},
		{"explicit union", record.Filter{Type: "union", Sets: []set{{Racks: []string{"r01"}}, {Tags: []string{"gpu"}}}},
			[]string{"r01-cmp01", "r01-cmp02", "r01-cmp03", "r01-gpu01", "r02-gpu01", "r02-gpu02"}},
		{"intersection", record.Filter{Type: "intersection", Sets: []set{{Racks: []string{"r01"}}, {Tags: []string{"gpu"}}}},
			[]string{"r01-gpu01"}},
		{"intersection of three", record.Filter{Type: "intersection", Sets: []set{
			{Tags: []string{"compute"}}, {Labels: map[string]string{"role": "compute"}}, {Names: []string{"r01-cmp03", "r02-cmp01", "r02-gpu01"}}}},
			[]string{"r01-cmp03", "r02-cmp01"}},
		{"disjoint intersection", record.Filter{Type: "intersection", Sets: []set{{Racks: []string{"r01"}}, {Racks: []string{"r02"}}}}, nil},
		{"union of disjoint sets", record.Filter{Sets: []set{{Racks: []string{"r01"}}, {Racks: []string{"r02"}}}}, all},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.filter.Select(d)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Select(%+v) (-want +got):\n%s", tc.filter, diff)
			}
		})
	}
}

func TestFilterSelectInvalidType(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	for _, typ := range []string{"and", "Union", "intersect", " "} {
		got, err := record.Filter{Type: typ, Sets: []design.NodeFilter{{Racks: []string{"r01"}}}}.Select(d)
		if err == nil {
			t.Errorf("type %q: selected %v, want an error", typ, got)
		}
	}
}
