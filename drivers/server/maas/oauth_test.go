package maas

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	gomaasapi "github.com/juju/gomaasapi/v2"
)

// oauthFields are the fields of an OAuth Authorization header, unescaped.
func oauthFields(t *testing.T, h string) map[string]string {
	t.Helper()
	rest, ok := strings.CutPrefix(h, "OAuth ")
	if !ok {
		t.Fatalf("header %q is not OAuth", h)
	}
	out := map[string]string{}
	for _, part := range strings.Split(rest, ", ") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			t.Fatalf("field %q of %q is not key=\"value\"", part, h)
		}
		u, err := url.QueryUnescape(v[1 : len(v)-1])
		if err != nil {
			t.Fatal(err)
		}
		out[k] = u
	}
	return out
}

// TestOAuthSignerAsGomaasapi: the header carries the fields gomaasapi's
// PLAINTEXT signer sends, with the same values but the nonce and the
// time; each nonce is 32 hex digits, as gomaasapi's, and no two requests
// share one.
func TestOAuthSignerAsGomaasapi(t *testing.T) {
	const key = "ck:tk:s3cr/et+="
	c, err := gomaasapi.NewAuthenticatedClient("http://maas.invalid/MAAS/api/2.0/", key)
	if err != nil {
		t.Fatal(err)
	}
	theirs, _ := http.NewRequest(http.MethodGet, "http://maas.invalid/", nil)
	if err := c.Signer.OAuthSign(theirs); err != nil {
		t.Fatal(err)
	}
	s, err := newOAuthSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	want := oauthFields(t, theirs.Header.Get("Authorization"))
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 1000 {
		ours, _ := http.NewRequest(http.MethodGet, "http://maas.invalid/", nil)
		s.sign(ours)
		got := oauthFields(t, ours.Header.Get("Authorization"))
		if len(got) != len(want) {
			t.Fatalf("fields %v, want those of %v", got, want)
		}
		for k, v := range want {
			if k == "oauth_nonce" || k == "oauth_timestamp" {
				continue
			}
			if got[k] != v {
				t.Fatalf("%s = %q, gomaasapi sends %q", k, got[k], v)
			}
		}
		if !hex32.MatchString(got["oauth_nonce"]) || seen[got["oauth_nonce"]] {
			t.Fatalf("nonce %q: not 32 hex digits, or sent before", got["oauth_nonce"])
		}
		seen[got["oauth_nonce"]] = true
		if got["oauth_timestamp"] == "" || strings.Trim(got["oauth_timestamp"], "0123456789") != "" {
			t.Fatalf("timestamp %q is not a number", got["oauth_timestamp"])
		}
	}
}
