package record

import (
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/design"
)

// Bounds of a task's node filter: it is stored with the task as sent.
const (
	MaxFilterSets     = 16    // sets in a filter
	MaxFilterNames    = 10000 // names in a set
	MaxFilterValues   = 64    // labels, tags or racks in a set
	MaxFilterValueLen = 253   // bytes of a name, label key or value, tag or rack
	// maxUnknownListed is how many unknown node names an error lists.
	maxUnknownListed = 10
)

// Validate checks the filter's form and bounds: its type, how many sets,
// names, labels, tags and racks, and their lengths.
func (f Filter) Validate() error {
	if f.Type != "" && f.Type != "union" && f.Type != "intersection" {
		return fmt.Errorf("node filter type %.40q: use union or intersection", f.Type)
	}
	if len(f.Sets) > MaxFilterSets {
		return fmt.Errorf("the node filter has %d sets: use at most %d (a set may list many names, racks, tags and labels)", len(f.Sets), MaxFilterSets)
	}
	for i, s := range f.Sets {
		if err := validateSet(s); err != nil {
			return fmt.Errorf("node filter set %d: %w", i+1, err)
		}
	}
	return nil
}

func validateSet(s design.NodeFilter) error {
	keys := make([]string, 0, len(s.Labels))
	vals := make([]string, 0, len(s.Labels))
	for k, v := range s.Labels {
		keys, vals = append(keys, k), append(vals, v)
	}
	for _, l := range []struct {
		what string
		max  int
		vs   []string
	}{{"names", MaxFilterNames, s.Names}, {"labels", MaxFilterValues, keys}, {"label values", MaxFilterValues, vals},
		{"tags", MaxFilterValues, s.Tags}, {"racks", MaxFilterValues, s.Racks}, {"sites", MaxFilterValues, s.Sites}} {
		if len(l.vs) > l.max {
			return fmt.Errorf("%d %s: use at most %d", len(l.vs), l.what, l.max)
		}
		for _, v := range l.vs {
			if len(v) > MaxFilterValueLen {
				return fmt.Errorf("one of its %s is %d bytes long (%.20q…): use at most %d", l.what, len(v), v, MaxFilterValueLen)
			}
		}
	}
	return nil
}

// CheckIn validates f and checks that every node it names is in d
// (revision id), listing up to maxUnknownListed of those that are not.
func (f Filter) CheckIn(d *design.Design, id string) error {
	if err := f.Validate(); err != nil {
		return err
	}
	var unknown []string
	seen := map[string]bool{}
	for _, s := range f.Sets {
		for _, n := range s.Names {
			if d.Nodes[n] == nil && !seen[n] {
				seen[n] = true
				unknown = append(unknown, n)
			}
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	list := strings.Join(unknown[:min(len(unknown), maxUnknownListed)], ", ")
	if len(unknown) > maxUnknownListed {
		list += fmt.Sprintf(" and %d more", len(unknown)-maxUnknownListed)
	}
	what := fmt.Sprintf("%d nodes that are", len(unknown))
	if len(unknown) == 1 {
		what = "a node that is"
	}
	return fmt.Errorf("the node filter names %s not in design %s: %s; check the names (`orchestrator nodes` lists the design's nodes)",
		what, id[:min(12, len(id))], list)
}
