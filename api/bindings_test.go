package api_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/design/designtest"
)

// exampleArchive is the example site as a design upload (tar.gz), with
// each replacement done once in the file that holds its old text.
func exampleArchive(t *testing.T, replace ...string) []byte {
	t.Helper()
	done := make([]bool, len(replace)/2)
	ar := exampleTar(t, func(s string) string {
		for i := 0; i+1 < len(replace); i += 2 {
			if !done[i/2] && strings.Contains(s, replace[i]) {
				s, done[i/2] = strings.Replace(s, replace[i], replace[i+1], 1), true
			}
		}
		return s
	})
	for i, ok := range done {
		if !ok {
			t.Fatalf("no example file holds %q", replace[2*i])
		}
	}
	return ar
}

// exampleTar is the example site as a tar.gz of one root, "site", each
// file's content passed through edit.
func exampleTar(t *testing.T, edit func(string) string) []byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(designtest.ExampleDir(), "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("example files: %v", err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := edit(string(b))
		if err := tw.WriteHeader(&tar.Header{Name: "site/" + filepath.Base(f), Mode: 0o644, Size: int64(len(s)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCredentialBindingsNeedAdmin: a design that changes where the
// provisioner's or a BMC's credentials go, or which stored secrets they
// and the boot action templates use, is refused to an operator (403,
// naming what changed, nothing stored, audited) and applied for an
// admin; other changes stay an operator's.
func TestCredentialBindingsNeedAdmin(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	op, admin := f.Token[api.RoleOperator], f.Token[api.RoleAdmin]
	current := func() string {
		t.Helper()
		var rev struct{ ID string }
		if code := f.json(t, "GET", "/api/v1/designs/current", op, nil, &rev); code != 200 {
			t.Fatalf("current: %d", code)
		}
		return rev.ID
	}
	start := current()
	for name, c := range map[string]struct {
		replace []string
		want    string
	}{
		"maas url":        {[]string{"url: http://127.0.0.1:5240/MAAS", "url: http://198.51.100.7:5240/MAAS"}, "maas.url"},
		"maas key ref":    {[]string{"apiKey: secret:maas-api-key", "apiKey: secret:bmc-admin"}, "maas.apiKey"},
		"key to a file":   {[]string{"apiKey: secret:maas-api-key", "apiKey: file:/etc/shadow"}, "maas.apiKey"},
		"server driver":   {[]string{"server: maas", "server: evil"}, "drivers.server"},
		"bmc address":     {[]string{"address: 10.10.0.101", "address: 10.10.0.199"}, "r01-cmp01"},
		"bmc password":    {[]string{"password: secret:bmc-admin", "password: secret:maas-api-key"}, "oob"},
		"bmc tls off":     {[]string{"caFile: /etc/slipway/bmc-ca.pem", "insecure: true"}, "r01-gpu01"},
		"bmc ca file":     {[]string{"caFile: /etc/slipway/bmc-ca.pem", "caFile: /tmp/mine.pem"}, "r01-gpu01"},
		"template secret": {[]string{`token='{{ secret "kubeadm-join-token" }}'`, `token='{{ secret "maas-api-key" }}'`}, `secret "maas-api-key"`},
		"dynamic secret":  {[]string{`token='{{ secret "kubeadm-join-token" }}'`, `token='{{ secret .Node.Rack }}'`}, "not a constant"},
	} {
		t.Run(name, func(t *testing.T) {
			code, b := f.do(t, "POST", "/api/v1/designs", op, "application/gzip", exampleArchive(t, c.replace...))
			var p api.Problem
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatalf("operator: %d %s: not problem details: %v", code, b, err)
			}
			if code != http.StatusForbidden || !strings.Contains(p.Detail, c.want) || !strings.Contains(p.Detail, "admin") {
				t.Fatalf("operator: %d %s; want 403 naming %q", code, b, c.want)
			}
			if cur := current(); cur != start {
				t.Fatalf("the refused design was stored: current %s, was %s", cur, start)
			}
		})
	}
	// Not a credential binding: an operator's.
	code, b := f.do(t, "POST", "/api/v1/designs", op, "application/gzip", exampleArchive(t, "address: 10.13.0.101", "address: 10.13.0.150"))
	if code != http.StatusCreated {
		t.Fatalf("operator, a node's storage address: %d %s", code, b)
	}
	// An admin may; the audit says what the change was.
	code, b = f.do(t, "POST", "/api/v1/designs", admin, "application/gzip", exampleArchive(t, "url: http://127.0.0.1:5240/MAAS", "url: http://198.51.100.7:5240/MAAS"))
	if code != http.StatusCreated {
		t.Fatalf("admin, maas url: %d %s", code, b)
	}
	var page api.AuditPage
	if code := f.json(t, "GET", "/api/v1/audit?limit=100", admin, nil, &page); code != 200 {
		t.Fatalf("audit: %d", code)
	}
	var denied, allowed int
	for _, r := range page.Items {
		if r.Route != "/api/v1/designs" {
			continue
		}
		switch {
		case r.Outcome == "denied" && r.Who.Role == api.RoleOperator && strings.Contains(r.Detail, "admin"):
			denied++
		case r.Outcome == "ok" && r.Who.Role == api.RoleAdmin && strings.Contains(r.Detail, "maas.url"):
			allowed++
		}
	}
	if denied != 10 || allowed != 1 {
		t.Errorf("audit: %d denied design applies with a detail, want 10; %d admin applies saying maas.url changed, want 1", denied, allowed)
	}
}
