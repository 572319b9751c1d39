package maas

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzBootResourceForms: no create form, selection form or upload chunk
// makes the region panic; a file never holds more than its size (0 for
// a size MAAS takes below 0) nor
// becomes complete with content of another SHA-256; a form over the
// lab's bounds is refused.
func FuzzBootResourceForms(f *testing.F) {
	f.Add("custom/gpu", "amd64/generic", "ddraw", "ubuntu/jammy", "8", "abcdefgh", "ubuntu", "noble", "amd64,arm64", "")
	f.Add("ubuntu/x", "arm64/generic", "tgz", "", "-1", "", "", "bionic", "*", "true")
	f.Add("a/b/c", "", "iso", "centos/8", "99999999999999999999", "xyz", "x", "y", "mips", "0")
	f.Fuzz(func(t *testing.T, name, arch, ftype, base, size, chunk, os, release, arches, keepOld string) {
		s := New(Options{APIKey: labCreds, TimeScale: 1e-6, ImageDir: t.TempDir(), MaxImageBytes: 1 << 10})
		defer s.Close()
		sha := sha256Hex([]byte(chunk))
		form := url.Values{"name": {name}, "architecture": {arch}, "filetype": {ftype}, "base_image": {base},
			"size": {size}, "sha256": {sha}, "keep_old": {keepOld}}
		w := fuzzDo(s, "POST", "/boot-resources/", strings.NewReader(form.Encode()), "application/x-www-form-urlencoded")
		if w.Code == http.StatusCreated {
			for _, v := range s.BootResources() {
				if v.Type == "Uploaded" && v.Size > 1<<10 {
					t.Fatalf("a file of %d bytes was created over MaxImageBytes", v.Size)
				}
			}
			fuzzUpload(t, s, reversed(chunk), sha)
		}
		sel := url.Values{"os": {os}, "release": {release}, "arches": {arches}}
		fuzzDo(s, "POST", "/boot-sources/1/selections/", strings.NewReader(sel.Encode()), "application/x-www-form-urlencoded")
	})
}

// fuzzUpload sends the chunk to every uploaded file and checks the
// invariants.
func fuzzUpload(t *testing.T, s *Server, chunk []byte, sha string) {
	for _, v := range s.BootResources() {
		if v.Type != "Uploaded" {
			continue
		}
		s.mu.Lock()
		b := s.bootResource(fmt.Sprint(v.ID))
		f := b.Sets[len(b.Sets)-1].Files[0]
		s.mu.Unlock()
		fuzzDo(s, "PUT", fmt.Sprintf("/boot-resources/%d/upload/%d/", v.ID, f.ID), bytes.NewReader(chunk), "application/octet-stream")
		after := viewOf(t, s, v.ID)
		if after.Held > max(after.Size, 0) || (after.Complete && sha256Hex(chunk) != sha) {
			t.Fatalf("after an upload of %d bytes: %+v", len(chunk), after)
		}
	}
}

func fuzzDo(s *Server, method, path string, body io.Reader, ct string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://lab"+APIPrefix+path, body)
	r.Header.Set("Content-Type", ct)
	labCreds.Sign(r)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// reversed is s's bytes in reverse order: content whose SHA-256 differs
// from s's unless s is a palindrome.
func reversed(s string) []byte {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return b
}
