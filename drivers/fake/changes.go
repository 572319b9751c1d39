package fake

import (
	"context"
	"slices"
	"strconv"

	"github.com/slipway-dev/slipway/drivers"
)

var _ drivers.ServerChanges = (*Server)(nil)

// note counts a change of m's state (a new machine is one). Called with
// f.mu held after every state the fake sets.
func (f *Server) note(m *machine) {
	if m.noted == m.State && m.changed != 0 {
		return
	}
	f.rev++
	m.noted, m.changed = m.State, f.rev
}

// Changes answers the machines whose state changed after cursor (the
// change counter as an earlier answer gave it); "" or a cursor the fake
// did not give is Reset.
func (f *Server) Changes(ctx context.Context, cursor string) (drivers.Changes, error) {
	if _, stop, err := f.begin(ctx, "Changes", "", false); stop {
		return drivers.Changes{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := drivers.Changes{Cursor: strconv.Itoa(f.rev)}
	after, err := strconv.Atoi(cursor)
	if err != nil || after < 0 || after > f.rev {
		out.Reset = true
		return out, nil
	}
	for id, m := range f.machines {
		if m.changed > after {
			out.Machines = append(out.Machines, id)
			if out.States == nil {
				out.States = map[string]string{}
			}
			out.States[id] = m.noted
		}
	}
	slices.Sort(out.Machines)
	return out, nil
}
