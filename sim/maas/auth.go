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
	var method, token, consumer, sig string // the fields read, the last of each name
	for rest := strings.TrimPrefix(h, "OAuth "); rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"`)
		if u, err := url.QueryUnescape(v); err == nil {
			v = u
		}
		switch k {
		case "oauth_signature_method":
			method = v
		case "oauth_token":
			token = v
		case "oauth_consumer_key":
			consumer = v
		case "oauth_signature":
			sig = v
		}
	}
	if method != "PLAINTEXT" {
		return "", errorf(http.StatusUnauthorized, "Authorization Error: 'Unsupported signature method'")
	}
	// s.tokens is set once, in New, and only read after: no lock, so
	// that authenticating a request does not queue behind the handlers
	// that hold s.mu (a listing of thousands of machines).
	user, ok := s.tokens[token]
	if !ok || user.creds.ConsumerKey != consumer {
		return "", errorf(http.StatusUnauthorized, "Authorization Error: 'Invalid access token: %s'", token)
	}
	// PLAINTEXT: the signature is consumer_secret&token_secret; MAAS's
	// consumer secret is empty.
	if sig != "&"+user.creds.TokenSecret {
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
