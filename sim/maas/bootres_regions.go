package maas

import (
	"fmt"
	"net/http"
	"time"
)

// Region controllers. A MAAS with several region controllers keeps a copy
// of every boot resource file on each (src/maasserver/models/
// bootresourcefile.py, BootResourceFileSync: one row per file and region).
// An upload fills the row of the region that received it; once that
// region holds the whole file, the other regions copy it from it (the
// sync-local-bootresource workflow started by filestore_add_file). A
// file's progress is MAAS's sync_progress, 100 * sum(held) / (size *
// regions), and it is complete only when every region holds it: only then
// is its set complete, listed as complete and deployable. The lab's
// regions answer on one address (the receiving region); the others copy a
// file Durations.RegionSync (scaled) after its last byte. An import fills
// every region at once.

// DefaultRegionSync is Durations.RegionSync when zero.
const DefaultRegionSync = 30 * time.Second

// regionCount is how many region controllers the lab's MAAS has.
func (s *Server) regionCount() int { return max(1, s.opts.RegionControllers) }

// regionSystemID names the i-th region controller (from 0); not drawn
// from the seeded generator, so machines keep their system IDs whatever
// the number of regions.
func regionSystemID(i int) string { return fmt.Sprintf("rgn%03d", i+1) }

// routesRegions serves GET regioncontrollers/ (RegionControllersHandler:
// a node listing with DISPLAYED_REGION_CONTROLLER_FIELDS).
func (s *Server) routesRegions() {
	s.handle("GET", "/regioncontrollers/", "", func(s *Server, _ *request) (any, *apiError) {
		out := make([]any, 0, s.regionCount())
		for i := range s.regionCount() {
			id, host := regionSystemID(i), fmt.Sprintf("lab-region-%d", i+1)
			out = append(out, map[string]any{"system_id": id, "hostname": host, "fqdn": host + "." + s.opts.Domain,
				"domain": map[string]any{"name": s.opts.Domain}, "architecture": "amd64/generic", "cpu_count": 8,
				"memory": 16384, "swap_size": nil, "osystem": "ubuntu", "distro_series": "jammy", "power_type": "manual",
				"power_state": "unknown", "ip_addresses": []string{fmt.Sprintf("10.0.0.%d", i+2)}, "interface_set": []any{},
				"zone": map[string]any{"name": "default"}, "status_action": "", "node_type": 3,
				"node_type_name": "Region controller", "resource_uri": uri("/regioncontrollers/%s/", id)})
		}
		return out, nil
	})
}

// newUploadedFile sets how many other regions must copy f; s.mu is held.
func (s *Server) newUploadedFile(f *bootFile) { f.want = s.regionCount() - 1 }

// receivedWhole starts the other regions' copies of f, which the
// receiving region now holds whole; s.mu is held.
func (s *Server) receivedWhole(f *bootFile) {
	if f.want == 0 || f.copies >= f.want || s.closed {
		return
	}
	if s.img.syncTimers == nil {
		s.img.syncTimers = map[int]*time.Timer{}
	}
	s.img.syncTimers[f.ID] = time.AfterFunc(s.scale(or(s.dur.RegionSync, DefaultRegionSync)), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.img.syncTimers, f.ID)
		if !s.closed {
			f.copies = f.want
		}
	})
}

// fileProgress is MAAS's sync_progress of f: 0 when no region has a row
// for it; ok false when it divides by zero (a size-0 file with a row).
func fileProgress(f *bootFile, rowed bool) (float64, bool) {
	held, total := f.regionBytes()
	if !rowed {
		return 0, true
	}
	if total == 0 {
		return 0, false
	}
	return 100 * float64(held) / float64(total), true
}

// divisionByZero: reading b renders a progress MAAS cannot compute (a
// size-0 file a region has a row for): MAAS answers 500.
func divisionByZero(b *bootResource) *apiError {
	for _, st := range b.Sets {
		for _, f := range st.Files {
			if _, ok := fileProgress(f, f.rowed || b.Type == "Synced"); !ok && !f.complete() {
				return errorf(http.StatusInternalServerError, "float division by zero")
			}
		}
	}
	return nil
}
