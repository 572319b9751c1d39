package maas

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Credentials is a MAAS API key: consumer_key:token_key:token_secret.
type Credentials struct {
	ConsumerKey, TokenKey, TokenSecret string
}

// ParseAPIKey splits a MAAS API key.
func ParseAPIKey(key string) (Credentials, error) {
	parts := strings.Split(key, ":")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Credentials{}, fmt.Errorf("a MAAS API key has the form consumer_key:token_key:token_secret")
	}
	return Credentials{parts[0], parts[1], parts[2]}, nil
}

// String returns the API key.
func (c Credentials) String() string { return c.ConsumerKey + ":" + c.TokenKey + ":" + c.TokenSecret }

// checkOAuth verifies an OAuth 1.0 PLAINTEXT Authorization header against
// the known credentials and returns the user it belongs to.
func (s *Server) checkOAuth(r *http.Request) (string, *apiError) {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "OAuth ") {
		return "", errorf(http.StatusUnauthorized, "Authorization Error: 'Expected OAuth authorization header'")
	}
	params := map[string]string{}
	for _, part := range strings.Split(strings.TrimPrefix(h, "OAuth "), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"`)
		if u, err := url.QueryUnescape(v); err == nil {
			v = u
		}
		params[k] = v
	}
	if params["oauth_signature_method"] != "PLAINTEXT" {
		return "", errorf(http.StatusUnauthorized, "Authorization Error: 'Unsupported signature method'")
	}
	// s.tokens is set once, in New, and only read after: no lock, so
	// that authenticating a request does not queue behind the handlers
	// that hold s.mu (a listing of thousands of machines).
	user, ok := s.tokens[params["oauth_token"]]
	if !ok || user.creds.ConsumerKey != params["oauth_consumer_key"] {
		return "", errorf(http.StatusUnauthorized, "Authorization Error: 'Invalid access token: %s'", params["oauth_token"])
	}
	// PLAINTEXT: the signature is consumer_secret&token_secret; MAAS's
	// consumer secret is empty.
	if sig := params["oauth_signature"]; sig != "&"+user.creds.TokenSecret {
		return "", errorf(http.StatusUnauthorized, "Authorization Error: 'Invalid signature'")
	}
	return user.name, nil
}

type apiUser struct {
	name  string
	creds Credentials
	admin bool
}

// Sign sets the OAuth 1.0 PLAINTEXT Authorization header MAAS expects, for
// clients that speak to the simulator (or a MAAS) without gomaasapi.
func (c Credentials) Sign(r *http.Request) {
	r.Header.Set("Authorization", fmt.Sprintf(`OAuth oauth_version="1.0", oauth_signature_method="PLAINTEXT", oauth_consumer_key=%q, oauth_token=%q, oauth_signature="&%s", oauth_nonce="%d", oauth_timestamp="%d"`,
		c.ConsumerKey, c.TokenKey, url.QueryEscape(c.TokenSecret), time.Now().UnixNano(), time.Now().Unix()))
}
