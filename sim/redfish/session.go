package redfish

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"sort"
	"strconv"
	"time"
)

// session is a login's: its token and when it was last used.
type session struct {
	id, user, tok string
	seq           int
	used          time.Time
}

// authorized checks the request's X-Auth-Token (a live session, which
// it keeps alive) or its HTTP Basic credentials.
func (s *Service) authorized(r *http.Request) bool {
	if tok := r.Header.Get("X-Auth-Token"); tok != "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		ss := s.sessions[tok]
		if ss == nil || time.Since(ss.used) > s.o.SessionTimeout {
			delete(s.sessions, tok)
			return false
		}
		ss.used = time.Now()
		return true
	}
	user, pass, ok := r.BasicAuth()
	return ok && s.credentialsMatch(user, pass)
}

func (s *Service) credentialsMatch(user, pass string) bool {
	u := subtle.ConstantTimeCompare([]byte(user), []byte(s.o.Username))
	p := subtle.ConstantTimeCompare([]byte(pass), []byte(s.o.Password))
	return u&p == 1
}

// login: POST SessionService/Sessions {UserName, Password} opens a
// session: 201, its token in X-Auth-Token and its URI in Location.
func (s *Service) login(w http.ResponseWriter, r *http.Request) {
	var body struct{ UserName, Password string }
	if !readJSON(w, r, &body) {
		return
	}
	if !s.credentialsMatch(body.UserName, body.Password) {
		s.count(func(st *Stats) { st.AuthFailures++ })
		writeError(w, http.StatusUnauthorized, "Base.1.8.NoValidSession", "The user name or password is not valid")
		return
	}
	ss, ok := s.openSession(body.UserName)
	if !ok {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "Base.1.8.SessionLimitExceeded", "The session could not be created: too many sessions are open")
		return
	}
	w.Header().Set("X-Auth-Token", ss.tok)
	w.Header().Set("Location", sessionsPath+"/"+ss.id)
	writeJSON(w, http.StatusCreated, sessionDoc(ss))
}

// routeSessions serves the Sessions collection (the live sessions), each
// session, a login and a logout.
func (s *Service) routeSessions(mux *http.ServeMux) {
	mux.HandleFunc("POST "+sessionsPath, s.login)
	mux.HandleFunc("GET "+sessionsPath, s.listSessions)
	mux.HandleFunc("GET "+sessionsPath+"/{id}", s.getSession)
	mux.HandleFunc("DELETE "+sessionsPath+"/{id}", s.logout)
}

// sessionDoc is a session's resource (the mockup's, with the session's
// own ID, user and URI).
func sessionDoc(ss *session) map[string]any {
	doc := mockDoc(sessionsPath + "/1234567890ABCDEF")
	doc["Id"], doc["UserName"], doc["@odata.id"] = ss.id, ss.user, sessionsPath+"/"+ss.id
	return doc
}

// live lists the sessions not past their timeout, oldest first. Called
// with s.mu held.
func (s *Service) live() []*session {
	out := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		if time.Since(ss.used) <= s.o.SessionTimeout {
			out = append(out, ss)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// Sessions is the number of live sessions.
func (s *Service) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live())
}

// listSessions answers the Sessions collection: the live sessions.
func (s *Service) listSessions(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	live := s.live()
	s.mu.Unlock()
	doc := mockDoc(sessionsPath)
	ms := make([]any, 0, len(live))
	for _, ss := range live {
		ms = append(ms, map[string]any{"@odata.id": sessionsPath + "/" + ss.id})
	}
	doc["Members"], doc["Members@odata.count"] = ms, len(ms)
	writeJSON(w, http.StatusOK, doc)
}

// getSession answers one live session. Any caller the service let in may
// read any session: the lab has one account, an administrator's, and the
// standard lets an administrator read every session.
func (s *Service) getSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	var found *session
	for _, ss := range s.live() {
		if ss.id == id {
			found = ss
		}
	}
	s.mu.Unlock()
	if found == nil {
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "No session has that ID")
		return
	}
	writeJSON(w, http.StatusOK, sessionDoc(found))
}

// openSession opens a session for user; false when MaxSessions are open
// (idle ones past their timeout are ended first).
func (s *Service) openSession(user string) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, ss := range s.sessions {
		if time.Since(ss.used) > s.o.SessionTimeout {
			delete(s.sessions, tok)
			s.stats.SessionsClosed++
		}
	}
	if len(s.sessions) >= s.o.MaxSessions {
		return nil, false
	}
	s.state.sessionSeq++
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	ss := &session{id: strconv.Itoa(s.state.sessionSeq), seq: s.state.sessionSeq, user: user, tok: hex.EncodeToString(b), used: time.Now()}
	s.sessions[ss.tok] = ss
	s.stats.SessionsOpened++
	return ss, true
}

// logout: DELETE SessionService/Sessions/{id} ends a session.
func (s *Service) logout(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	found := false
	for tok, ss := range s.sessions {
		if ss.id == id {
			delete(s.sessions, tok)
			s.stats.SessionsClosed++
			found = true
		}
	}
	s.mu.Unlock()
	if !found {
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "No session has that ID")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
