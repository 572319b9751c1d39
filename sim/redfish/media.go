package redfish

import (
	"net/http"
	"net/url"
	"path"
)

// routeMedia serves the virtual CD under the Manager (where sushy, Ironic
// and gofish's Manager.VirtualMedia look) and, as an alias of the same
// medium, under the System (where the DMTF mockup and some BMCs have it).
func (s *Service) routeMedia(mux *http.ServeMux) {
	paths := []string{managerMediaPath, mediaPath}
	if s.o.SystemMediaOnly {
		paths = paths[1:]
	} else {
		mux.HandleFunc("GET "+managerPath+"/VirtualMedia", s.getManagerMedia)
	}
	for _, p := range paths {
		mux.HandleFunc("GET "+p, s.getMedia(p))
		mux.HandleFunc("POST "+p+"/Actions/VirtualMedia.InsertMedia", s.insertMedia(p))
		mux.HandleFunc("POST "+p+"/Actions/VirtualMedia.EjectMedia", s.ejectMedia)
	}
}

// getManagerMedia answers the Manager's VirtualMedia collection: its CD.
func (s *Service) getManagerMedia(w http.ResponseWriter, _ *http.Request) {
	doc := mockDoc(systemPath + "/VirtualMedia")
	doc["@odata.id"] = managerPath + "/VirtualMedia"
	doc["Members"] = []any{map[string]any{"@odata.id": managerMediaPath}}
	doc["Members@odata.count"] = 1
	writeJSON(w, http.StatusOK, doc)
}

// getMedia answers the virtual CD at p (its state is the service's one
// medium, whichever path it is read at).
func (s *Service) getMedia(p string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		doc := mockDoc(mediaPath)
		s.mu.Lock()
		m := s.state.media
		s.mu.Unlock()
		doc["@odata.id"] = p
		doc["Image"], doc["Inserted"], doc["WriteProtected"] = m.image, m.inserted, m.writeProtected
		doc["ImageName"], doc["ConnectedVia"] = "", "NotConnected"
		if m.image == "" {
			doc["Image"] = nil
		} else {
			doc["ImageName"], doc["ConnectedVia"] = path.Base(m.image), "URI"
		}
		delete(doc, "Certificates")
		doc["Actions"] = map[string]any{
			"#VirtualMedia.InsertMedia": map[string]any{"target": p + "/Actions/VirtualMedia.InsertMedia"},
			"#VirtualMedia.EjectMedia":  map[string]any{"target": p + "/Actions/VirtualMedia.EjectMedia"},
		}
		writeJSON(w, http.StatusOK, doc)
	}
}

// maxImageURL bounds an inserted image's URL.
const maxImageURL = 2048

// insertMedia: {Image, Inserted, WriteProtected}; Image must be an http,
// https or nfs URL. A medium already inserted must be ejected first (409),
// as BMCs answer. The medium is in when the action answers, so a client
// that does not follow the task (202 and a monitor, task.go) sees it
// inserted at once.
func (s *Service) insertMedia(p string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.insert(w, r, p) }
}

func (s *Service) insert(w http.ResponseWriter, r *http.Request, p string) {
	body := struct {
		Image          string
		Inserted       *bool
		WriteProtected *bool
	}{}
	if !readJSON(w, r, &body) {
		return
	}
	u, err := url.Parse(body.Image)
	if err != nil || len(body.Image) > maxImageURL || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "nfs") || u.Host == "" {
		writeError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueFormatError", "Image must be an http, https or nfs URL")
		return
	}
	m := mediaState{image: body.Image, inserted: body.Inserted == nil || *body.Inserted,
		writeProtected: body.WriteProtected == nil || *body.WriteProtected, via: p}
	s.mu.Lock()
	busy := s.state.media.inserted
	if !busy {
		s.state.media = m
		s.stats.MediaInserted++
	}
	s.mu.Unlock()
	if busy {
		writeError(w, http.StatusConflict, "Base.1.8.ResourceInUse", "A medium is inserted: eject it first")
		return
	}
	s.startTask(w, func() {}) // a monitor for the clients that follow one; the medium is in already
}

func (s *Service) ejectMedia(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	if s.state.media.inserted {
		s.stats.MediaEjected++
	}
	s.state.media = mediaState{}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) getManager(w http.ResponseWriter, _ *http.Request) {
	doc := mockDoc(managerPath)
	setIf(doc, "FirmwareVersion", s.version(kindBMC, s.o.BMCFirmware))
	setIf(doc, "ServiceEntryPointUUID", s.o.UUID)
	if s.o.UUID != "" {
		doc["UUID"] = managerUUID(s.o.UUID) // the BMC's own, not the system's
	}
	if !s.o.SystemMediaOnly {
		doc["VirtualMedia"] = map[string]any{"@odata.id": managerPath + "/VirtualMedia"}
	}
	writeJSON(w, http.StatusOK, doc)
}
