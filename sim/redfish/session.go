package redfish

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// session is a login's: its token and when it was last used.
type session struct {
	id, user, tok string
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
	loc := sessionsPath + "/" + ss.id
	w.Header().Set("X-Auth-Token", ss.tok)
	w.Header().Set("Location", loc)
	doc := mockDoc(sessionsPath + "/1234567890ABCDEF")
	doc["Id"], doc["UserName"], doc["@odata.id"] = ss.id, ss.user, loc
	writeJSON(w, http.StatusCreated, doc)
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
	ss := &session{id: strconv.Itoa(s.state.sessionSeq), user: user, tok: hex.EncodeToString(b), used: time.Now()}
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
