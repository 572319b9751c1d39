package introspection

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzActionReport: no body makes POST /v1/self/actions/... answer 500,
// and only a well-formed report is accepted.
func FuzzActionReport(f *testing.F) {
	e := newEnv(f)
	tok := e.issue("r01-cmp01", "1")
	for _, s := range []string{`{"status":"success"}`, `{"status":"failure","message":"boom"}`, `{"status":"running"}`,
		`{"status":"success","extra":true}`, `{"status":"success"}{}`, `null`, ``, `[]`, `{"status":`, `{"message":"\u0000"}`,
		`{"status":"success","message":"` + strings.Repeat("x", 5000) + `"}`, "\xff\xfe", `{"Status":"success"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, action := range []string{"x", "node-bootstrap"} {
			req := httptest.NewRequest(http.MethodPost, "/v1/self/actions/"+action, strings.NewReader(string(body)))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			e.srv.Handler().ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s: status %d for %q: %s", action, rec.Code, body, rec.Body)
			}
			if action == "x" && rec.Code != 404 {
				t.Fatalf("an action that does not exist: %d", rec.Code)
			}
			if rec.Code == 200 {
				req, err := decodeReport(strings.NewReader(string(body)))
				if err != nil {
					t.Fatalf("accepted a body the decoder refuses: %q", body)
				}
				_ = req
			}
		}
	})
}

// FuzzToken: no Authorization header makes /v1/self answer 500, and only
// the issued token (as a bearer credential) gets a 200.
func FuzzToken(f *testing.F) {
	e := newEnv(f)
	tok := e.issue("r01-cmp01", "1")
	for _, s := range []string{"Bearer " + tok, "bearer " + tok, "Bearer  " + tok + " ", "Bearer " + tok[:40], "Basic " + tok,
		tok, "Bearer sni_" + strings.Repeat("A", 43), "Bearer " + strings.Repeat("x", 5000), "Bearer \x00", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		for _, path := range []string{"/v1/self", "/v1/self/packages"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header["Authorization"] = []string{h}
			rec := httptest.NewRecorder()
			e.srv.Handler().ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("status %d for %q", rec.Code, h)
			}
			got, ok := bearer(req.Header)
			valid := ok && got == tok
			if (rec.Code == 200) != valid {
				t.Fatalf("status %d for %q (valid: %v)", rec.Code, h, valid)
			}
			if !valid && rec.Code != 401 {
				t.Fatalf("status %d, want 401 for %q", rec.Code, h)
			}
		}
		// The path token of the NoCloud seed.
		if !strings.ContainsAny(h, "/?#%") && h != "" && h != "." && h != ".." {
			req := httptest.NewRequest(http.MethodGet, "/v1/nocloud/x/meta-data", nil)
			req.URL.Path = "/v1/nocloud/" + h + "/meta-data"
			req.URL.RawPath = ""
			rec := httptest.NewRecorder()
			e.srv.Handler().ServeHTTP(rec, req)
			if rec.Code >= 500 || (rec.Code == 200) != (h == tok) {
				t.Fatalf("nocloud: status %d for %q", rec.Code, h)
			}
		}
	})
}
