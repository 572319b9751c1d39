package maas

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestCheckOAuthHeaders: the fields of the Authorization header decide,
// in any order, unescaped, the last of a repeated name winning; another
// signature method, token, consumer key or signature is a 401.
func TestCheckOAuthHeaders(t *testing.T) {
	s := New(Options{})
	var c Credentials
	for _, u := range s.tokens {
		c = u.creds
	}
	ok := `oauth_token="` + c.TokenKey + `", oauth_consumer_key="` + c.ConsumerKey + `", oauth_signature="%26` + c.TokenSecret + `"`
	for h, want := range map[string]bool{
		`OAuth oauth_signature_method="PLAINTEXT", ` + ok:                                  true,
		`OAuth ` + ok + `,oauth_signature_method=PLAINTEXT`:                                true,
		`OAuth oauth_signature_method="HMAC-SHA1", ` + ok:                                  false,
		`OAuth oauth_signature_method="PLAINTEXT", ` + ok + `, oauth_token="x"`:            false,
		`OAuth oauth_signature_method="PLAINTEXT", ` + ok + `, oauth_signature="%26x"`:     false,
		`OAuth oauth_signature_method="PLAINTEXT", ` + ok + `, oauth_consumer_key="other"`: false,
		`Bearer x`: false,
		`OAuth `:   false,
	} {
		r := httptest.NewRequest(http.MethodGet, "/MAAS/api/2.0/machines/", nil)
		r.Header.Set("Authorization", h)
		_, err := s.checkOAuth(r)
		if (err == nil) != want {
			t.Errorf("%s: error %v, want accepted %v", h, err, want)
		}
	}
}
