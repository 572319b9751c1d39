package redfish

import (
	"maps"
	"net/http"
	"slices"
)

// mockAttributes are the mockup's BIOS attributes in effect.
func mockAttributes() map[string]any {
	attrs, _ := mockDoc(biosPath)["Attributes"].(map[string]any)
	return clone(attrs)
}

func (s *Service) getBIOS(w http.ResponseWriter, _ *http.Request) {
	doc := mockDoc(biosPath)
	s.mu.Lock()
	doc["Attributes"] = clone(s.state.bios)
	s.mu.Unlock()
	if st, ok := doc["@Redfish.Settings"].(map[string]any); ok {
		delete(st, "Messages") // the mockup's failed setting is not this service's
		st["SupportedApplyTimes"] = []string{biosApplyTime}
	}
	delete(doc, "ResetBiosToDefaultsPending")
	writeJSON(w, http.StatusOK, doc)
}

// getSettings answers the pending settings: those in effect with the
// staged ones over them.
func (s *Service) getSettings(w http.ResponseWriter, _ *http.Request) {
	doc := mockDoc(settingsPath)
	s.mu.Lock()
	attrs := clone(s.state.bios)
	for k, v := range s.state.pending {
		attrs[k] = v
	}
	s.mu.Unlock()
	doc["Attributes"] = attrs
	writeJSON(w, http.StatusOK, doc)
}

// patchSettings stages attributes for the next reset. An attribute the
// BIOS does not have, a read-only one, or a value its registry does not
// allow (another type, not in the enumeration's list, out of range) is
// refused (400 naming it, Base message IDs as BMCs give them), and
// nothing is staged.
func (s *Service) patchSettings(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Attributes map[string]any
		ApplyTime  *struct{ ApplyTime string } `json:"@Redfish.SettingsApplyTime"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if body.ApplyTime != nil && body.ApplyTime.ApplyTime != biosApplyTime {
		writeError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "The value "+body.ApplyTime.ApplyTime+
			" of @Redfish.SettingsApplyTime/ApplyTime is not supported by the BIOS: "+biosApplyTime)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(body.Attributes)) {
		if id, msg := s.checkBIOS(k, body.Attributes[k]); id != "" {
			writeError(w, http.StatusBadRequest, id, msg)
			return
		}
	}
	for k, v := range body.Attributes {
		s.state.pending[k] = v
	}
	if body.ApplyTime != nil {
		s.lab.biosApplyAt = true
	}
	w.WriteHeader(http.StatusNoContent)
}

// applyPending makes the staged BIOS settings, and the firmware installed
// for the system's components, the ones in effect (at a reset that starts
// the machine).
//
// Modelling iDRAC (Vendor "dell"), staged settings are applied only when
// they were staged with an apply time: without one (and no configuration
// job) they stay pending across resets.
func (s *Service) applyPending() {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.staged()
	defer func() {
		if s.staged() < before {
			s.applied++
		}
	}()
	if s.o.Vendor != vendorDell || s.lab.biosApplyAt {
		for k, v := range s.state.pending {
			s.state.bios[k] = v
		}
		s.state.pending = map[string]any{}
		s.lab.biosApplyAt = false
	}
	s.applyFirmware()
}

// biosApplyTime is the one apply time the lab's BIOS supports, and
// advertises in its @Redfish.Settings: staged settings take effect at
// the next reset of the system.
const biosApplyTime = "OnReset"

// SystemReset is a reset of the machine the service did not see (a power
// cycle through IPMI, or the machine's own button): the staged BIOS
// settings and the firmware installed take effect.
func (s *Service) SystemReset() {
	s.mu.Lock()
	s.noteReset()
	s.mu.Unlock()
	s.applyPending()
}

// RefuseBIOS makes the BIOS refuse to change the attribute name (400
// PropertyNotWritable naming it), as a BMC refuses a read-only or
// locked attribute.
func (s *Service) RefuseBIOS(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lab.faults.readOnlyBIOS[name] = true
}

// AllowBIOS undoes RefuseBIOS: the BIOS takes changes of name again.
func (s *Service) AllowBIOS(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lab.faults.readOnlyBIOS, name)
}

// SetBIOS changes an attribute in effect behind everyone's back (as a
// technician in the BIOS setup would).
func (s *Service) SetBIOS(name string, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.bios[name] = v
}
