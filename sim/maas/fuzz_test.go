package maas

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzRequests: no method, path, op, form body or Authorization header
// makes the simulator panic, and a request without valid credentials is
// never answered 2xx (except GET /version/, which MAAS serves to anyone).
func FuzzRequests(f *testing.F) {
	f.Add("GET", "/MAAS/api/2.0/machines/", "", "", true)
	f.Add("POST", "/MAAS/api/2.0/machines/", "allocate", "name=x&tags=a,b", true)
	f.Add("POST", "/MAAS/api/2.0/machines/abc/", "deploy", "user_data=%%%", true)
	f.Add("PUT", "/MAAS/api/2.0/subnets/cidr:10.0.0.0%2F24/", "", "gateway_ip=1", false)
	f.Add("GET", "/MAAS/api/2.0/nodes/x/blockdevices/1/partition/2", "", "", true)
	f.Add("POST", "/MAAS/api/2.0/machines/", "allocate", "cpu_count=NaN&mem=1e400&zone=a&zone=default&tags=x+y,z&dry_run=1", true)
	f.Add("GET", "/MAAS/api/2.0/nodes/x/", "details", "", true)
	creds := Credentials{"ck", "tk", "ts"}
	s := New(Options{APIKey: creds, TimeScale: 1e-6})
	defer s.Close()
	s.mu.Lock()
	s.newMachine("n1", "", []string{"52:54:00:00:00:01"})
	s.mu.Unlock()
	f.Fuzz(func(t *testing.T, method, path, op, body string, signed bool) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n") || strings.ContainsAny(method, " \r\n/") {
			return
		}
		u := path
		if op != "" {
			u += "?op=" + url.QueryEscape(op)
		}
		r, err := http.NewRequest(method, "http://lab"+u, strings.NewReader(body))
		if err != nil {
			return
		}
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if signed {
			creds.Sign(r)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if !signed && w.Code < 300 && !(strings.HasPrefix(r.URL.Path, "/MAAS/api/2.0/version") || strings.HasPrefix(r.URL.Path, "/sim/stats")) {
			t.Fatalf("%s %s answered %d without credentials", method, u, w.Code)
		}
	})
}
