package firmwarestore

import (
	"net/http"
	"os"
	"strings"
)

// Handler serves the verified images: GET and HEAD of /firmware/<sha256>
// (Range requests too, as http.ServeContent answers them). Only an image
// the store verified is served; anything else is 404.
func (s *Store) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		sum, ok := strings.CutPrefix(r.URL.Path, Path)
		if !ok || !hexSHA.MatchString(sum) {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		p, ok := s.paths[sum]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		f, err := os.Open(p)
		if err != nil {
			http.Error(w, "image unavailable", http.StatusServiceUnavailable)
			return
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			http.Error(w, "image unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("ETag", `"`+sum+`"`)
		http.ServeContent(w, r, sum+".bin", fi.ModTime(), f)
	})
}
