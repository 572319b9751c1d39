package redfish

import (
	"net/http"
	"net/url"
)

func (s *Service) getMedia(w http.ResponseWriter, _ *http.Request) {
	doc := mockDoc(mediaPath)
	s.mu.Lock()
	m := s.state.media
	s.mu.Unlock()
	doc["Image"], doc["Inserted"], doc["WriteProtected"] = m.image, m.inserted, m.writeProtected
	doc["ImageName"] = ""
	if m.image == "" {
		doc["Image"] = nil
	}
	doc["Actions"] = map[string]any{
		"#VirtualMedia.InsertMedia": map[string]any{"target": mediaPath + "/Actions/VirtualMedia.InsertMedia"},
		"#VirtualMedia.EjectMedia":  map[string]any{"target": mediaPath + "/Actions/VirtualMedia.EjectMedia"},
	}
	writeJSON(w, http.StatusOK, doc)
}

// insertMedia: {Image, Inserted, WriteProtected}; Image must be an http,
// https or nfs URL. A medium already inserted must be ejected first (409),
// as BMCs answer. It runs as a task (202 and a task monitor, task.go): the
// medium is in once the task completed.
func (s *Service) insertMedia(w http.ResponseWriter, r *http.Request) {
	body := struct {
		Image          string
		Inserted       *bool
		WriteProtected *bool
	}{}
	if !readJSON(w, r, &body) {
		return
	}
	u, err := url.Parse(body.Image)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "nfs") || u.Host == "" {
		writeError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueFormatError", "Image must be an http, https or nfs URL")
		return
	}
	s.mu.Lock()
	busy := s.state.media.inserted
	s.mu.Unlock()
	if busy {
		writeError(w, http.StatusConflict, "Base.1.8.ResourceInUse", "A medium is inserted: eject it first")
		return
	}
	m := mediaState{image: body.Image, inserted: body.Inserted == nil || *body.Inserted,
		writeProtected: body.WriteProtected == nil || *body.WriteProtected}
	s.startTask(w, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.state.media = m
		s.stats.MediaInserted++
	})
}

func (s *Service) ejectMedia(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.state.media = mediaState{}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) getManager(w http.ResponseWriter, _ *http.Request) {
	doc := mockDoc(managerPath)
	setIf(doc, "FirmwareVersion", s.version(kindBMC, s.o.BMCFirmware))
	writeJSON(w, http.StatusOK, doc)
}
