package redfish

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/redfishmock"
)

// maxBody bounds a request body.
const maxBody = 64 << 10

// handler routes the service's requests behind its faults, limits and
// authentication.
func (s *Service) handler() http.Handler {
	mux := http.NewServeMux()
	s.routeRoot(mux)     // service.go
	s.routeSessions(mux) // session.go
	s.routeMedia(mux)    // media.go
	mux.HandleFunc("GET "+systemPath, s.getSystem)
	mux.HandleFunc("PATCH "+systemPath, s.patchSystem)
	mux.HandleFunc("POST "+systemPath+"/Actions/ComputerSystem.Reset", s.reset)
	mux.HandleFunc("GET "+biosPath, s.getBIOS)
	mux.HandleFunc("GET "+settingsPath, s.getSettings)
	mux.HandleFunc("PATCH "+settingsPath, s.patchSettings)
	mux.HandleFunc("GET "+managerPath, s.getManager)
	s.labRoutes(mux) // update.go: UpdateService, tasks, Storage
	mux.HandleFunc("GET /", s.getMockup)
	return s.guard(mux)
}

// guard applies the faults, counts the request, bounds its body and
// checks its credentials (the service root is open, as the standard
// says, and so is a login).
func (s *Service) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.bmcResetting() || (s.o.Unreachable != nil && s.o.Unreachable()) {
			drop(w)
			return
		}
		if s.o.Latency > 0 {
			time.Sleep(s.o.Latency)
		}
		s.count(func(st *Stats) { st.Requests++ })
		if s.takeBusy() {
			s.count(func(st *Stats) { st.Busy++ })
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "Base.1.8.ServiceTemporarilyUnavailable", "The service is busy; retry after the time given")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.bodyLimit(r)) // push.go: an image pushed is larger
		if !open(r) && !s.authorized(r) {
			s.count(func(st *Stats) { st.AuthFailures++ })
			w.Header().Set("WWW-Authenticate", `Basic realm="redfish"`)
			writeError(w, http.StatusUnauthorized, "Base.1.8.NoValidSession", "No valid session or credentials were given")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// open: the requests that need no credentials.
func open(r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	return (r.Method == http.MethodGet && (p == redfishmock.Root || p == "/redfish" || p == redfishmock.Root+"/odata")) ||
		(r.Method == http.MethodPost && p == sessionsPath)
}

// drop ends the connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func (s *Service) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// getMockup serves any other resource of the mockup as it is.
func (s *Service) getMockup(w http.ResponseWriter, r *http.Request) {
	b, ok := redfishmock.Get(r.URL.Path)
	if !ok {
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "The resource at the URI was not found")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// mockDoc decodes the mockup's document at p (the service's own state is
// set on it before it is sent).
func mockDoc(p string) map[string]any {
	b, _ := redfishmock.Get(p)
	var doc map[string]any
	_ = json.Unmarshal(b, &doc)
	return doc
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers a Redfish error: a message ID from the Base
// registry and its text.
func writeError(w http.ResponseWriter, status int, id, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"code": id, "message": msg,
		"@Message.ExtendedInfo": []any{map[string]any{"MessageId": id, "Message": msg, "Severity": "Critical"}},
	}})
}

// readJSON decodes the request's body into v; false (and a 400) when it
// does not decode.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "The request body is not valid JSON")
		return false
	}
	return true
}

// takeBusy uses up one of the busy answers SetBusy asked for.
func (s *Service) takeBusy() bool {
	for {
		n := s.busy.Load()
		if n <= 0 {
			return false
		}
		if s.busy.CompareAndSwap(n, n-1) {
			return true
		}
	}
}
